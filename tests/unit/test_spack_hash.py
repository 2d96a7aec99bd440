"""The recorded Spack build (tests/data/spack) is Spack's own output for the committed recipes.

spack.lock records, for each package, Spack's hash of its recipe (`package_hash`) and the DAG
hash of each node. Both are recomputed here with Spack 1.1's rules (tests/tools/spack_hash.py):
a recipe in spack-repo/ edited without a new recording, or a recording edited by hand, fails.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from tests.tools.spack_hash import (RecipeError, canonical_source, content_hash, dag_hash,
                                    recipe_hash, source_id)

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "spack"
PACKAGES = ROOT / "spack-repo" / "spack_repo" / "iolab" / "packages"
LOCK = json.loads((DATA / "spack.lock").read_text())
NODES = LOCK["concrete_specs"]
HOW = "the recipe changed after the recording: re-record tests/data/spack (its README.md)"


def local_recipes() -> list[Path]:
    return sorted(PACKAGES.glob("*/package.py"))


def node_of(name: str) -> dict:
    found = [n for n in NODES.values() if n["name"] == name and n["namespace"] == "iolab"]
    assert len(found) == 1, f"spack.lock has {len(found)} iolab nodes named {name}"
    return found[0]


@pytest.mark.parametrize("recipe", local_recipes(), ids=lambda p: p.parent.name)
def test_each_local_recipe_is_the_one_spack_hashed(recipe):
    node = node_of(recipe.parent.name.replace("_", "-"))
    sid = source_id(recipe, node["version"])
    assert sid == node["parameters"].get("commit", sid)     # the source Spack fetched
    assert content_hash(recipe.read_text(), sid) == node["package_hash"], f"{recipe}: {HOW}"


def test_every_local_package_in_the_lock_has_its_recipe():
    names = {n["name"] for n in NODES.values() if n["namespace"] == "iolab"}
    assert names == {p.parent.name.replace("_", "-") for p in local_recipes()} == {"btio", "h5bench"}


@pytest.mark.parametrize("key", sorted(NODES), ids=lambda k: NODES[k]["name"])
def test_each_node_of_the_lock_has_its_dag_hash(key):
    """A node's hash covers its package_hash and its dependencies' hashes: a package_hash put
    right by hand, without the hashes that follow from it, fails here."""
    assert dag_hash(NODES[key]) == key == NODES[key]["hash"]


def test_the_recorded_outputs_name_only_the_locks_nodes():
    found = json.loads((DATA / "find-json.out").read_text())
    assert {s["hash"]: s for s in found} == NODES
    assert {r["hash"] for r in LOCK["roots"]} <= set(NODES)
    full = re.compile(r"(?<![a-z0-9])[a-z2-7]{32}(?![a-z0-9])")
    for path in [*DATA.glob("install*.out"), *DATA.glob("load-*.out"), *DATA.glob("location-*.out")]:
        unknown = set(full.findall(path.read_text())) - set(NODES)
        assert not unknown, f"{path.name} names hashes that are not in spack.lock: {unknown}"
    short = re.findall(r"^\[[+ -]\]\s+([a-z2-7]{7})\s", (DATA / "concretize.out").read_text(), re.M)
    assert short and all(any(k.startswith(s) for k in NODES) for s in short)
    h5bench = node_of("h5bench")["hash"]
    assert f"h5bench-1.6-{h5bench}" in (DATA / "install.out").read_text()
    assert f"SPACK_LOADED_HASHES={h5bench};" in (DATA / "load-h5bench.out").read_text()


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


def test_a_multimethod_recipe_is_refused_not_guessed():
    recipe = RECIPE + '\n    @when("@1.0")\n    def cmake_args(self):\n        return []\n'
    with pytest.raises(RecipeError, match=r"package.py:\d+: @when multi-method"):
        recipe_hash(recipe)
