"""Damaged Spack recordings (issue 23, item 8): a copy of the real recording (tests/data/spack)
and of the committed recipes (spack-repo/), damaged one way each, then the recording check
`python -m tests.tools.spack_hash` as a process. Each damage is refused with the one line that
names it; the edits Spack does not hash are not."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import TIMEOUT, Answer, refused

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data" / "spack"
REPO = ROOT / "spack-repo" / "spack_repo" / "iolab"
LOCK = json.loads((DATA / "spack.lock").read_text())
H5BENCH = next(k for k, n in LOCK["concrete_specs"].items() if n["name"] == "h5bench")
OTHER = "a" * 32                                     # a hash of no node
LOCK_SHA256 = json.loads((DATA / "index.json").read_text())["environment"]["spack_lock_sha256"]


def check(data: Path, repo: Path) -> Answer:
    args = ("-m", "tests.tools.spack_hash", "--data", str(data), "--repo", str(repo))
    try:
        done = subprocess.run([sys.executable, *args], cwd=ROOT, capture_output=True, text=True,
                              timeout=TIMEOUT, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        pytest.fail(f"spack_hash: no answer after {TIMEOUT} s (a hang)")
    answer = Answer(args, done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stdout + done.stderr, str(answer)
    return answer


@pytest.fixture
def copy(tmp_path):
    data, repo = tmp_path / "spack", tmp_path / "iolab"
    shutil.copytree(DATA, data)
    shutil.copytree(REPO, repo, ignore=shutil.ignore_patterns("__pycache__"))
    return data, repo


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1))


def edit_lock(data: Path, change) -> None:
    lock = json.loads((data / "spack.lock").read_text())
    change(lock)
    (data / "spack.lock").write_text(json.dumps(lock, separators=(",", ":")))


def node(lock: dict, name: str) -> dict:
    return next(n for n in lock["concrete_specs"].values() if n["name"] == name)


def recipe(repo: Path, name: str) -> Path:
    return repo / "packages" / name / "package.py"


def fifo(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


def devzero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


# (damage, what the first error line says)
DAMAGES = {
    # the committed recipes
    "h5bench-build-changed": (
        lambda d, r: edit(recipe(r, "h5bench"), '"H5BENCH_ALL", False', '"H5BENCH_ALL", True'),
        ["h5bench/package.py: Spack's package_hash of it is", "spack.lock has 5wkx6lah",
         "the recipe changed after the recording; re-record tests/data/spack"]),
    "btio-install-changed": (
        lambda d, r: edit(recipe(r, "btio"), 'install("btio", prefix.bin)',
                          'install("btio", prefix.sbin)'),
        ["btio/package.py: Spack's package_hash of it is", "the recipe changed after the recording"]),
    "btio-parallel-method-added": (
        lambda d, r: edit(recipe(r, "btio"), "    parallel = False\n",
                          "    parallel = False\n\n    def setup_build_environment(self, env):\n"
                          "        env.set('MAKEFLAGS', '-j1')\n"),
        ["btio/package.py: Spack's package_hash of it is"]),
    "h5bench-source-commit-changed": (
        lambda d, r: edit(recipe(r, "h5bench"), 'commit="675c86d1', 'commit="775c86d1'),
        ["h5bench/package.py: Spack's package_hash of it is", "spack.lock has 5wkx6lah"]),
    "h5bench-version-renamed": (
        lambda d, r: edit(recipe(r, "h5bench"), 'version("1.6"', 'version("1.6.1"'),
        ["h5bench/package.py: no version('1.6', ...), the version spack.lock has"]),
    "h5bench-not-python": (
        lambda d, r: edit(recipe(r, "h5bench"), "    def cmake_args(self):", "    def cmake_args(self)"),
        ["h5bench/package.py:", ": not Python:"]),
    "h5bench-multimethod": (
        lambda d, r: edit(recipe(r, "h5bench"), "    def cmake_args(self):",
                          '    @when("@1.6")\n    def cmake_args(self):'),
        ["h5bench/package.py:", "@when multi-method: its hash depends on the spec"]),
    "h5bench-recipe-removed": (
        lambda d, r: shutil.rmtree(r / "packages" / "h5bench"),
        ["spack.lock: iolab package h5bench has no recipe in iolab/packages"]),
    "recipe-added-after-recording": (
        lambda d, r: shutil.copytree(r / "packages" / "btio", r / "packages" / "btio_ng"),
        ["btio_ng/package.py: not in spack.lock: the recipe is newer than the recording"]),
    "h5bench-recipe-fifo": (
        lambda d, r: fifo(recipe(r, "h5bench")),
        ["h5bench/package.py: not a regular file"]),
    # spack.lock
    "lock-package-hash-edited-by-hand": (      # what the recipe hashed to before its last edit
        lambda d, r: edit_lock(d, lambda lock: node(lock, "h5bench").update(
            package_hash="o4vqtmefuetr7hq5gkc44dbti25y2gcgymo3znx3trmj4ga7beya====")),
        [f"spack.lock: node h5bench {H5BENCH[:7]} hashes to", "edited after Spack wrote it"]),
    "lock-variant-edited": (
        lambda d, r: edit_lock(d, lambda lock: node(lock, "ior")["parameters"].update(lustre=True)),
        ["spack.lock: node ior", "edited after Spack wrote it"]),
    "lock-external-path-edited": (
        lambda d, r: edit_lock(d, lambda lock: node(lock, "hdf5")["external"].update(path="/opt/hdf5")),
        ["spack.lock: node hdf5", "edited after Spack wrote it"]),
    "lock-hash-field-differs": (
        lambda d, r: edit_lock(d, lambda lock: node(lock, "fio").update(hash=OTHER)),
        ["spack.lock: node fio", f"says its hash is {OTHER}"]),
    "lock-dependency-dropped": (
        lambda d, r: edit_lock(d, lambda lock: lock["concrete_specs"].pop(node(lock, "zlib")["hash"])),
        ["spack.lock: darshan-", " depends on zlib", "which the lock does not have"]),  # -runtime, -util
    "lock-root-unknown": (
        lambda d, r: edit_lock(d, lambda lock: next(  # roots are in no fixed order
            x for x in lock["roots"] if x["spec"].startswith("darshan-util")).update(hash=OTHER)),
        ["spack.lock: root darshan-util@3.4.7 aaaaaaa is not in the lock"]),
    "lock-truncated": (
        lambda d, r: (d / "spack.lock").write_text((d / "spack.lock").read_text()[:5000]),
        ["spack.lock:1: not JSON:"]),
    "lock-not-a-lockfile": (
        lambda d, r: (d / "spack.lock").write_text('{"spack": {"specs": ["fio"]}}'),
        ["spack.lock: no concrete_specs of nodes: not a Spack lockfile"]),
    "lock-binary": (
        lambda d, r: (d / "spack.lock").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe"),
        ["spack.lock: not UTF-8 text (byte 0)"]),
    "lock-missing": (
        lambda d, r: (d / "spack.lock").unlink(),
        ["spack.lock: missing"]),
    "lock-fifo": (
        lambda d, r: fifo(d / "spack.lock"),
        ["spack.lock: not a regular file"]),
    "lock-dev-zero": (
        lambda d, r: devzero(d / "spack.lock"),
        ["spack.lock: not a regular file"]),
    # the outputs recorded with it
    "find-json-edited": (
        lambda d, r: edit(d / "find-json.out", '"version":"4.0.0"', '"version":"4.0.1"'),
        ["find-json.out: its nodes are not spack.lock's"]),
    "find-json-truncated": (
        lambda d, r: (d / "find-json.out").write_text((d / "find-json.out").read_text()[:300]),
        ["find-json.out: not the JSON list Spack prints (JSONDecodeError)"]),
    "install-log-of-another-build": (
        lambda d, r: (d / "install.out").write_text((d / "install.out").read_text()
                                                    .replace(H5BENCH, OTHER)),
        [f"install.out: names {OTHER}, which spack.lock does not have"]),
    "load-output-of-another-build": (
        lambda d, r: edit(d / "load-h5bench.out", f"SPACK_LOADED_HASHES={H5BENCH}",
                          f"SPACK_LOADED_HASHES={OTHER}"),
        [f"load-h5bench.out: names {OTHER}, which spack.lock does not have"]),
    "load-output-fifo": (
        lambda d, r: fifo(d / "load-ior.out"),
        ["load-ior.out: not a regular file"]),
    "index-lock-digest-stale": (
        lambda d, r: edit(d / "index.json", LOCK_SHA256, LOCK_SHA256[::-1]),
        ["index.json: spack_lock_sha256 is not the sha256 of spack.lock"]),
    "index-without-lock-digest": (
        lambda d, r: edit(d / "index.json", '"spack_lock_sha256"', '"lock_sha256"'),
        ["index.json: no environment.spack_lock_sha256 (KeyError)"]),
}


@pytest.mark.parametrize("name", sorted(DAMAGES))
def test_a_damaged_recording_is_refused_with_its_reason(copy, name):
    data, repo = copy
    damage, says = DAMAGES[name]
    damage(data, repo)
    refused(check(data, repo), "spack recording: error: ", *says)


@pytest.mark.parametrize("name, old, new", [
    ("comment", "    # The submodules", "    # A new comment.\n    # The submodules"),
    ("docstring", '"""h5bench: a suite', '"""h5bench (edited): a suite'),
    ("homepage", 'homepage = "https://github.com/hpc-io/h5bench"', 'homepage = "https://h5bench.org"'),
    ("directive", 'depends_on("mpi")', 'depends_on("mpi")\n    depends_on("zlib-api")'),
    ("layout", "        return [\n", "        return [  # the options\n"),
])
def test_edits_spack_does_not_hash_pass(copy, name, old, new):
    """Comments, docstrings, metadata and directives are not in Spack's package_hash (a
    directive changes the concretized spec instead, which the stand-in's digest of spack-repo/
    catches): the recording stays Spack's for the recipe."""
    data, repo = copy
    edit(recipe(repo, "h5bench"), old, new)
    answer = check(data, repo)
    assert answer.returncode == 0 and answer.stderr == "", str(answer)
