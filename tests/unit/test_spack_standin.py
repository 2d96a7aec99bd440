"""The `spack` stand-in (tests/bin/spack): it checks what it is asked against the recorded real
build (tests/data/spack) and replays it, refusing anything else."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
STANDIN = ROOT / "tests" / "bin" / "spack"
DATA = ROOT / "tests" / "data" / "spack"
INDEX = json.loads((DATA / "index.json").read_text())
SITE = ROOT / "reframe" / "config" / "spack" / "debian12.yaml"


def spack(env: Path, *args: str, path: str = "/usr/bin:/bin", extra: dict | None = None):
    environ = {"PATH": path, **(extra or {})}
    return subprocess.run([sys.executable, str(STANDIN), "-e", str(env), *args],
                          capture_output=True, text=True, env=environ, timeout=60)


@pytest.fixture
def env(tmp_path):
    """An environment directory as the stack fixture prepares it."""
    d = tmp_path / "spackenv"
    d.mkdir()
    shutil.copy(ROOT / "spack.yaml", d / "spack.yaml")
    shutil.copytree(ROOT / "spack-repo", d / "spack-repo")
    return d


def mapped(text: str, env: Path) -> str:
    return (text.replace(INDEX["env_dir"], str(env))
            .replace(INDEX["install_root"], str(env / ".spack-env/iolab-standin/opt/spack")))


def test_the_recorded_sequence_replays_and_writes_what_spack_wrote(env):
    out = spack(env, "config", "add", "-f", str(SITE))
    assert out.returncode == 0, out.stderr
    assert (env / "spack.yaml").read_bytes() == (DATA / "spack.yaml.merged").read_bytes()
    out = spack(env, "concretize")
    assert out.returncode == 0 and out.stdout == mapped((DATA / "concretize.out").read_text(), env)
    assert out.stderr == "IOLAB-STANDIN: replaying tests/data/spack/concretize.out\n"
    assert (env / "spack.lock").read_bytes() == (DATA / "spack.lock").read_bytes()

    refused = spack(env, "load", "--sh", "ior")      # nothing installed yet
    assert refused.returncode == 1 and "before a successful install" in refused.stderr

    failed = spack(env, "install", "--fail-fast")
    assert failed.returncode == 1
    assert failed.stdout == mapped((DATA / "install-fail.out").read_text(), env)
    assert "==> Error: ChecksumError: sha256 checksum failed for " in failed.stderr
    assert spack(env, "load", "--sh", "ior").returncode == 1    # a failed install installs nothing

    done = spack(env, "install", "--fail-fast", "--no-checksum")
    assert done.returncode == 0, done.stderr
    assert "==> ior: Successfully installed ior-4.0.0-" in done.stdout
    assert str(env / ".spack-env/iolab-standin/opt/spack/linux-x86_64/ior-4.0.0-") in done.stdout
    assert INDEX["install_root"] not in done.stdout and INDEX["env_dir"] not in done.stdout

    where = spack(env, "location", "-i", "darshan-runtime")
    assert where.returncode == 0
    assert where.stdout.startswith(str(env / ".spack-env/iolab-standin/opt/spack/linux-x86_64/"
                                       "darshan-runtime-3.4.7-"))
    found = json.loads(spack(env, "find", "--json").stdout)
    assert {s["name"] for s in found} >= {"ior", "h5bench", "btio", "darshan-runtime", "fio"}


def installed(env):
    for args in (("config", "add", "-f", str(SITE)), ("concretize",),
                 ("install", "--fail-fast", "--no-checksum")):
        assert spack(env, *args).returncode == 0


def exports(text: str) -> dict:
    return dict(line.removeprefix("export ").rstrip(";").split("=", 1)
                for line in text.splitlines() if line.startswith("export "))


def test_load_puts_the_callers_variables_where_spack_would(env):
    """Spack 1.1 applies each modification to its caller's value: a prefix inspection
    prepends (PATH, MANPATH, ...), hdf5 appends its lib/ to LD_LIBRARY_PATH, Open MPI sets
    MPICC; SPACK_LOADED_HASHES is prepended to; MANPATH ends with ':'."""
    installed(env)
    out = spack(env, "load", "--sh", "ior", path="/job/bin:/usr/bin",
                extra={"LD_LIBRARY_PATH": "/job/lib", "MANPATH": "/job/man",
                       "SPACK_LOADED_HASHES": "abc", "HOME": "/home/u"})
    assert out.returncode == 0 and out.stderr == ""      # environment only: no replay mark
    got = exports(out.stdout)
    prefix = str(env / ".spack-env/iolab-standin/opt/spack/linux-x86_64/ior-4.0.0-")
    assert got["PATH"].startswith(prefix) and got["PATH"].endswith("/bin:/job/bin:/usr/bin")
    assert "/usr/bin:/bin" not in got["PATH"]            # the recording caller's PATH is gone
    assert got["LD_LIBRARY_PATH"] == "/job/lib:/usr/lib/x86_64-linux-gnu/hdf5/openmpi/lib"
    assert got["MANPATH"].startswith(prefix) and got["MANPATH"].endswith(
        "/usr/share/man:/usr/share/man:/usr/share/man:/job/man:")
    ior = next(k for k, n in json.loads((DATA / "spack.lock").read_text())["concrete_specs"].items()
               if n["name"] == "ior")
    assert got["SPACK_LOADED_HASHES"] == f"{ior}:abc"
    assert got["MPICC"] == "/usr/bin/mpicc"
    # what the shell does with it
    shell = subprocess.run(["bash", "-c", f"{out.stdout}\nprintf '%s' \"$PATH\""], capture_output=True,
                           text=True, env={"PATH": "/job/bin:/usr/bin:/bin"})
    assert shell.stdout == got["PATH"]


def test_load_prints_only_what_changes_for_this_caller(env):
    installed(env)
    same = spack(env, "load", "--sh", "ior", extra={"MPICC": "/usr/bin/mpicc", "HOME": "/home/u"})
    got = exports(same.stdout)
    assert "MPICC" not in got and got["MPICXX"] == "/usr/bin/mpic++"    # already that value
    assert got["MANPATH"].endswith("/usr/share/man:/usr/share/man:/usr/share/man:")
    spaced = exports(spack(env, "load", "--sh", "fio", path="/my tools/bin:/usr/bin").stdout)
    assert "PATH" not in spaced                          # fio is an external: PATH untouched
    quoted = spack(env, "load", "--sh", "ior", path="/my tools/bin:/usr/bin").stdout
    assert "bin:/my tools/bin:/usr/bin';" in quoted and "export PATH='" in quoted


def test_load_darshan_sets_its_log_directory_from_home_unless_set(env):
    """darshan-runtime (log_path=none) sets DARSHAN_LOG_DIR_PATH to the caller's $HOME only when
    the caller has none: the recording's /root is the recording caller's $HOME."""
    installed(env)
    home = exports(spack(env, "load", "--sh", "darshan-runtime", extra={"HOME": "/home/u"}).stdout)
    assert home["DARSHAN_LOG_DIR_PATH"] == "/home/u"
    kept = exports(spack(env, "load", "--sh", "darshan-runtime",
                         extra={"HOME": "/home/u", "DARSHAN_LOG_DIR_PATH": "/scratch/logs"}).stdout)
    assert "DARSHAN_LOG_DIR_PATH" not in kept           # the caller's stays in force
    homeless = spack(env, "load", "--sh", "darshan-runtime")
    assert homeless.returncode == 1 and "$HOME, which is not set" in homeless.stderr


@pytest.mark.parametrize("change, message", [
    ("spack.yaml", "is not the recorded spack.yaml"),
    ("spack-repo", "is not the package repository of the recording"),
    ("site", "is not the recorded site config"),
])
def test_an_environment_that_was_not_recorded_is_refused(env, tmp_path, change, message):
    site = SITE
    if change == "spack.yaml":
        (env / "spack.yaml").write_text((env / "spack.yaml").read_text().replace("fio", "fio@3.36"))
    elif change == "spack-repo":
        recipe = env / "spack-repo" / "spack_repo" / "iolab" / "packages" / "btio" / "package.py"
        recipe.write_text(recipe.read_text() + "\n# edited\n")
    else:
        site = tmp_path / "site.yaml"
        site.write_text(SITE.read_text() + "\n# edited\n")
    out = spack(env, "config", "add", "-f", str(site))
    assert out.returncode == 1 and message in out.stderr and "tests/data/spack/README.md" in out.stderr
    assert (env / "spack.yaml").read_text() != (DATA / "spack.yaml.merged").read_text()


def test_a_recipe_spack_would_hash_differently_is_refused_by_name(env):
    """Whatever index.json's digest of spack-repo/ says: the recording's spack.lock holds
    Spack's package_hash of each local recipe, and the stand-in recomputes it."""
    recipe = env / "spack-repo" / "spack_repo" / "iolab" / "packages" / "h5bench" / "package.py"
    recipe.write_text(recipe.read_text().replace('"H5BENCH_ALL", False', '"H5BENCH_ALL", True'))
    for args in (("config", "add", "-f", str(SITE)), ("concretize",), ("load", "--sh", "h5bench")):
        out = spack(env, *args)
        assert out.returncode == 1 and out.stdout == "", out
        assert out.stderr.startswith(f"spack stand-in: {recipe}: Spack's package_hash of it is ")
        assert "the recipe changed after the recording; re-record tests/data/spack" in out.stderr


def test_commands_and_options_without_a_recording_are_refused(env):
    assert spack(env, "concretize").returncode == 1      # before config add: not the merged manifest
    assert spack(env, "config", "add", "-f", str(SITE)).returncode == 0
    assert "run `spack -e ENV concretize` first" in spack(env, "install").stderr
    assert spack(env, "concretize").returncode == 0
    out = spack(env, "install", "--fail-fast", "-j", "64")
    assert out.returncode == 1 and "no recording of `spack -e ENV install --fail-fast -j 64`" in out.stderr
    out = subprocess.run([sys.executable, str(STANDIN), "install", "ior"], capture_output=True, text=True)
    assert out.returncode == 1 and "only `spack -e ENV <command>`" in out.stderr
    assert not (env / ".spack-env").exists(), "nothing is installed"


def test_version_is_the_recorded_spack():
    out = subprocess.run([sys.executable, str(STANDIN), "--version"], capture_output=True, text=True)
    assert out.stdout.strip() == INDEX["spack_version"] == "1.1.0"     # what the release prints
    assert "2e907202bcc8209a6a62243aab50c179b524cc3b" in INDEX["spack_source"]
    assert os.access(STANDIN, os.X_OK)
