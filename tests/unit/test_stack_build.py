"""Setting up the stack from an offline bundle (iolab.stack.build), and the spack provider with a
built environment (iolab.software): on the real shared bundle where it is beside the checkout,
damaged on purpose, and on the real spack.lock of tests/data/spack."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.layers.darshan.preload import RUNTIME
from iolab.errors import IolabError
from iolab.software import from_extras, lock_specs, summarize
from iolab.stack import build
from iolab.stack import bundle as bundles

REPO = Path(__file__).resolve().parents[2]
LOCK = REPO / "tests" / "data" / "spack" / "spack.lock"
SHARED = Path(os.environ.get("IOLAB_SPACK_BUNDLE") or REPO.parent / "shared" / "spack-offline")
need_bundle = pytest.mark.skipif(not SHARED.is_dir(), reason="no offline Spack bundle beside the checkout")


def fake_env(tmp_path: Path, lock: Path = LOCK) -> Path:
    """A built environment's shape: spack.lock and a view with bin/ior and lib/libdarshan.so."""
    env = tmp_path / "env"
    view = env / ".spack-env" / "view"
    (view / "bin").mkdir(parents=True)
    (view / "lib").mkdir()
    shutil.copy(lock, env / "spack.lock")
    (view / "bin" / "ior").write_text("#!/bin/sh\n")
    (view / "bin" / "ior").chmod(0o755)
    (view / "lib" / "libdarshan.so").write_bytes(b"")
    return env


def test_lock_specs_are_the_built_ones_with_their_hashes():
    specs = lock_specs(LOCK)
    raw = json.loads(LOCK.read_text())["concrete_specs"]
    assert set(specs) == {"h5bench", "compiler-wrapper", "gcc-runtime", "ior", "darshan-runtime", "btio",
                          "darshan-util"}          # externals (gcc, openmpi, hdf5, fio...) are not
    assert specs["ior"]["version"] == "4.0.0" and raw[specs["ior"]["hash"]]["name"] == "ior"
    assert lock_specs(LOCK.with_name("no-such.lock")) == {}


def test_a_built_environment_puts_its_view_first_and_is_named_in_records(tmp_path):
    env = fake_env(tmp_path)
    stack = from_extras({"stack": {"provider": "spack", "env": str(env)}})
    view = str(env / ".spack-env" / "view")
    assert stack.view == view
    assert stack.env() == {"PATH": f"{view}/bin" + ':"$PATH"'}      # no LD_LIBRARY_PATH: RPATH
    assert stack.available("ior") is True
    assert stack.available("no-such-benchmark-here") is False
    assert stack.preload(RUNTIME)[0] == f"{view}/lib/libdarshan.so"
    assert stack.supplied_by(f"{view}/bin/ior") == "spack"
    assert stack.supplied_by("/usr/bin/fio") == "path"             # an external, from the system
    assert stack.describe(f"{view}/bin/ior") == {"provider": "spack", "supplied_by": "spack",
                                                 "spack_env": str(env), "view": view}


@pytest.mark.parametrize("damage, message", [
    ("no-lock", "no built Spack environment"),
    ("no-view", "no built Spack environment"),
    ("empty", "names a built Spack environment"),
    ("provider", "names a built Spack environment"),
])
def test_a_built_environment_that_is_not_there_is_refused_at_load(tmp_path, damage, message):
    env = fake_env(tmp_path)
    conf = {"provider": "spack", "env": str(env)}
    if damage == "no-lock":
        (env / "spack.lock").unlink()
    elif damage == "no-view":
        shutil.rmtree(env / ".spack-env")
    elif damage == "empty":
        conf["env"] = " "
    else:
        conf["provider"] = "prefix"
        conf["prefix"] = str(tmp_path)
    with pytest.raises(IolabError, match=message) as err:
        from_extras({"stack": conf})
    assert err.value.key == "extras.iolab.stack.env"


def test_the_stack_summary_names_the_view_and_each_spack_hash(tmp_path):
    from iolab.results.record import Record

    env = fake_env(tmp_path)
    specs = lock_specs(LOCK)
    view = str(env / ".spack-env" / "view")
    rec = Record.from_json({
        "experiment": "x", "case_id": "c", "repetition": 1, "benchmark": "ior", "status": "ok",
        "params": {}, "observed": {}, "metrics": [],
        "provenance": {"binary": {"name": "ior", "path": f"{view}/bin/ior", "version": "4.0.0",
                                  "sha256": "ab" * 32},
                       "stack": {"provider": "spack", "supplied_by": "spack", "spack_env": str(env),
                                 "view": view, "spack_lock_sha256": "cd" * 32,
                                 "versions": {"ior": "4.0.0"}, "hashes": {"ior": specs["ior"]["hash"]}}}})
    lines = summarize([rec])
    assert lines[0] == f"stack: spack, spack.lock sha256 {'cd' * 32}, view {view}"
    assert lines[1] == (f"  ior ior: 4.0.0, {view}/bin/ior (spack), sha256 {'ab' * 8}, "
                        f"Spack hash {specs['ior']['hash']}")


def test_progress_lines_name_each_package_with_dashes_in_its_version(tmp_path):
    log = build.Log(tmp_path / "log", out=open(os.devnull, "w"))
    said = []
    log.say = said.append
    progress = build.Progress(log)
    full = "btio-2019-07-21-ees2faa" + "a" * 25
    progress(f"==> Installing {full} [6/7]")
    progress(f"==> btio: Successfully installed {full}")
    assert len(said) == 1 and said[0].startswith("   built btio@2019-07-21 (ees2faa) in ")


def test_a_failed_build_names_the_package_and_its_build_log(tmp_path):
    lines = ["==> Installing ior-4.0.0-" + "x" * 32 + " [5/7]",
             "==> Error: ProcessError: Command exited with status 2:",
             "See build log for details:",
             "  /somewhere/spack-stage/spack-build-out.txt",
             "==> Error: Failed to install ior due to ChildError"]
    exc = build.SpackFailed("spack -e env install", 1, lines, tmp_path / "setup.log")
    assert exc.package == "ior"
    assert exc.build_log == "/somewhere/spack-stage/spack-build-out.txt"
    assert "ProcessError" in str(exc) and "build log: /somewhere/spack-stage/spack-build-out.txt" in str(exc)


@need_bundle
def test_the_inputs_key_follows_spack_yaml_the_recipes_and_the_site_config(tmp_path):
    b = bundles.open_bundle(SHARED)
    root = tmp_path / "root"
    (root / "spack-repo" / "pkg").mkdir(parents=True)
    (root / "spack.yaml").write_text("spack: {specs: [ior]}\n")
    (root / "spack-repo" / "pkg" / "package.py").write_text("# recipe\n")
    site = tmp_path / "site.yaml"
    site.write_text("packages: {}\n")
    key = build.inputs_key(b, root, site)
    assert build.inputs_key(b, root, site) == key
    (root / "spack-repo" / "pkg" / "package.py").write_text("# recipe, changed\n")
    key2 = build.inputs_key(b, root, site)
    site.write_text("packages: {gcc: {}}\n")
    key3 = build.inputs_key(b, root, site)
    (root / "spack.yaml").write_text("spack: {specs: [ior, fio]}\n")
    assert len({key, key2, key3, build.inputs_key(b, root, site)}) == 4


def copy_bundle(tmp_path: Path) -> Path:
    copy = tmp_path / "bundle"
    shutil.copytree(SHARED, copy)
    for path in copy.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)   # CI's shared/ has no write bits
    return copy


@need_bundle
@pytest.mark.parametrize("damage", ["byte", "extra", "missing"])
def test_a_damaged_bundle_is_refused_before_anything_is_extracted(tmp_path, damage):
    copy = copy_bundle(tmp_path)
    archive = next((copy / "mirror").rglob("*.tar.gz"))
    rel = archive.relative_to(copy).as_posix()
    if damage == "byte":
        data = bytearray(archive.read_bytes())
        data[len(data) // 2] ^= 0xFF
        archive.write_bytes(bytes(data))
    elif damage == "extra":
        rel = "mirror/_source-cache/archive/ff/planted.tar.gz"
        (copy / rel).parent.mkdir(parents=True)
        (copy / rel).write_bytes(b"not vouched for")
    else:
        archive.unlink()
    home = tmp_path / "home"
    out = subprocess.run([sys.executable, "-m", "iolab.stack.build", str(copy), "--home", str(home)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2, out.stdout + out.stderr
    assert out.stderr.startswith("iolab: error: ") and rel in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert not list(home.glob("spack-*")) and not (home / "envs").exists()


def _built_view() -> Path | None:
    env = os.environ.get("IOLAB_SPACK_ENV")
    if env is None and (REPO / ".iolab" / "spack-env").is_file():
        env = (REPO / ".iolab" / "spack-env").read_text().strip()
    view = Path(env) / ".spack-env" / "view" if env else None
    return view if view is not None and (view / "bin" / "darshan-config").exists() else None


def test_darshan_is_found_as_a_user_would_look_for_it(tmp_path, monkeypatch):
    """With the benchmarks on PATH alone: DARSHAN_LIB, else darshan-config --dyn-ld-flags (a real one,
    from the built stack, reached through a directory with no lib/ beside it), else beside a
    PATH entry's prefix."""
    from iolab.software import Stack

    view = _built_view()
    if view is None:
        pytest.skip("no built Spack environment with Darshan (scripts/setup --spack-bundle DIR)")
    lone = tmp_path / "bin"
    lone.mkdir()
    (lone / "darshan-config").symlink_to(view / "bin" / "darshan-config")
    monkeypatch.setenv("PATH", f"{lone}:/usr/bin:/bin")
    monkeypatch.delenv("LD_LIBRARY_PATH", raising=False)
    monkeypatch.delenv("DARSHAN_LIB", raising=False)
    found = Stack().preload(RUNTIME)
    assert found is not None and Path(found[0]).resolve() == (view / "lib" / "libdarshan.so").resolve()
    (lone / "darshan-config").unlink()
    shutil.copytree(view / "lib", tmp_path / "lib", symlinks=True,
                    ignore=lambda d, names: [n for n in names if not n.startswith("libdarshan.so")])
    (lone / "ior").symlink_to(view / "bin" / "ior")         # a prefix of one's own: lib/ beside bin/
    assert Stack().preload(RUNTIME)[0] == str(tmp_path / "lib" / "libdarshan.so")
    monkeypatch.setenv("DARSHAN_LIB", str(view / "lib" / "libdarshan.so.0"))
    assert Stack().preload(RUNTIME)[0] == str(view / "lib" / "libdarshan.so.0")
    monkeypatch.setenv("DARSHAN_LIB", str(tmp_path / "nothing.so"))
    with pytest.raises(IolabError, match="DARSHAN_LIB=.*: no such file"):
        Stack().preload(RUNTIME)
