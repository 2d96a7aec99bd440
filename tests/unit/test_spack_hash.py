"""The recorded Spack build (tests/data/spack) is Spack's own output for the committed recipes.

spack.lock records, for each package, Spack's hash of its recipe (`package_hash`) and the DAG
hash of each node. Both are recomputed here with Spack 1.1's rules (tests/tools/spack_hash.py):
a recipe in spack-repo/ edited without a new recording, or a recording edited by hand, fails.
"""

from __future__ import annotations

import base64
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.tools.spack_hash import (RecipeError, canonical_source, check_recording, content_hash,
                                    dag_hash, recipe_hash, source_id)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "spack"
REPO = ROOT / "spack-repo" / "spack_repo" / "iolab"
LOCK = json.loads((DATA / "spack.lock").read_text())
NODES = LOCK["concrete_specs"]


def test_the_recording_is_spacks_output_for_the_committed_recipes():
    """Each local recipe's package_hash, each node's DAG hash, the outputs' hashes and
    index.json's lock digest (tests/corpus/test_spack_recording.py damages each)."""
    assert check_recording(DATA, REPO) == []
    local = {n["name"] for n in NODES.values() if n["namespace"] == "iolab"}
    assert local == {p.parent.name for p in REPO.glob("packages/*/package.py")} == {"btio", "h5bench"}


@pytest.mark.parametrize("name", ["btio", "h5bench"])
def test_each_local_recipe_hashes_to_its_node(name):
    recipe = REPO / "packages" / name / "package.py"
    (node,) = [n for n in NODES.values() if n["name"] == name]
    sid = source_id(recipe, node["version"])
    assert sid == node["parameters"]["commit"]                # the source Spack fetched
    assert content_hash(recipe.read_text(), sid) == node["package_hash"]
    assert dag_hash(node) == node["hash"]


def test_the_checker_says_so_as_a_command():
    ok = subprocess.run([sys.executable, "-m", "tests.tools.spack_hash"], cwd=ROOT,
                        capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr
    assert ok.stdout == f"spack recording: {len(NODES)} nodes, each with Spack's hashes for the " \
                        "committed recipes\n"


# The rule itself, on a recipe small enough to read: what goes, what stays, how it is written.
RECIPE = '''\
"""Module docstring."""
from spack.package import *


class Demo(CMakePackage):
    """Class docstring."""

    homepage = "https://example.org"
    git = "https://example.org/demo.git"
    parallel = False
    version("1.0", commit="abc")
    depends_on("mpi")
    if True:
        variant("x", default=True)
    for flavour in ("a", "b"):
        conflicts(flavour)
    keep = 1, 2

    def cmake_args(self):
        """Method docstring."""
        "a stray string"
        depends_on("stays inside a function")
        homepage = "stays too"
        return [self.define("X", True), f"-DY={self.spec['mpi'].prefix!r:>10}", lambda: 0]
'''

CANONICAL = '''\
from spack.package import *

class Demo(CMakePackage):
    keep = (1, 2)

    def cmake_args(self):
        depends_on('stays inside a function')
        homepage = 'stays too'
        return [self.define('X', True), f"-DY={self.spec['mpi'].prefix!r:>10}", lambda : 0]
'''


def test_the_canonical_source_drops_docstrings_directives_and_metadata_only():
    assert canonical_source(RECIPE) == CANONICAL


def test_the_hashes_are_base32_of_sha1_and_of_sha256_over_the_sorted_parts():
    recipe = base64.b32encode(hashlib.sha1(CANONICAL.encode()).digest()).decode().lower()
    assert recipe_hash(RECIPE) == recipe and len(recipe) == 32
    parts = b"".join(sorted([b"abc", recipe.encode()]))
    assert content_hash(RECIPE, "abc") == (
        base64.b32encode(hashlib.sha256(parts).digest()).decode().lower())
    assert content_hash(RECIPE, "abc").endswith("====")
    assert content_hash(RECIPE + "\n# a comment\n", "abc") == content_hash(RECIPE, "abc")
    assert content_hash(RECIPE.replace('"X", True', '"X", False'), "abc") != content_hash(RECIPE, "abc")


def test_a_def_overrides_the_earlier_defs_of_its_name_as_in_spack():
    """Spack keeps, of the `def`s of one name (outside functions), the last undecorated one and
    the decorated ones after it: the module's helper `install` is not hashed, both halves of a
    property are."""
    source = ("def install():\n    return 1\n\nclass A:\n    def install(self):\n        pass\n\n"
              "    @property\n    def x(self):\n        return 1\n\n    @x.setter\n"
              "    def x(self, v):\n        def install():\n            pass\n")
    assert canonical_source(source) == (
        "class A:\n\n    def install(self):\n        pass\n\n    @property\n    def x(self):\n"
        "        return 1\n\n    @x.setter\n    def x(self, v):\n\n        def install():\n"
        "            pass\n")


def test_a_multimethod_recipe_is_refused_not_guessed():
    recipe = RECIPE + '\n    @when("@1.0")\n    def cmake_args(self):\n        return []\n'
    with pytest.raises(RecipeError, match=r"package.py:\d+: @when multi-method"):
        recipe_hash(recipe)
