"""Helpers for end-to-end tests that run ReFrame for real on the `local` system."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from iolab.stack import SPACK_ENV_NOTE

REPO = Path(__file__).resolve().parents[2]
STANDIN_BIN = REPO / "tests" / "bin"
# The console script installed beside this interpreter (the venv's), else the one on PATH.
REFRAME = str(Path(sys.executable).with_name("reframe")) if Path(sys.executable).with_name(
    "reframe").exists() else (shutil.which("reframe") or "reframe")


def sigint_default() -> None:
    """A Popen preexec_fn: SIGINT as a terminal delivers it. A process started in the background
    by a non-interactive shell (`bash .ci/run &`) inherits SIGINT ignored, and Python then never
    raises KeyboardInterrupt: a test of what SIGINT does must not depend on how it was started."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def sigkill(proc: subprocess.Popen) -> None:
    """SIGKILL a process started by a test (nothing of it can record or clean up), and reap it."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)


def have(binary: str) -> bool:
    return shutil.which(binary) is not None


def slurm_up() -> tuple[bool, str]:
    """Whether the one-node Slurm of scripts/slurm-local is up, and why not."""
    if not have("sinfo"):
        return False, "Slurm is not installed (no sinfo on PATH); run scripts/slurm-local up"
    try:
        out = subprocess.run([str(REPO / "scripts" / "slurm-local"), "status"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return False, f"scripts/slurm-local status failed: {exc}"
    if out.returncode != 0:
        return False, "the local Slurm is not up (scripts/slurm-local status failed); run it with `up`"
    return True, ""


# CI brings Slurm up before the tests (.ci/run): there, a Slurm that is down is a failure.
SLURM_REQUIRED = os.environ.get("IOLAB_REQUIRE_SLURM") == "1"


# IOLAB_REQUIRE_STACK=1 (CI, once scripts/setup --spack-bundle built the stack): every end-to-end
# test runs the real benchmarks; one that would need a stand-in fails instead of replaying.
STACK_REQUIRED = os.environ.get("IOLAB_REQUIRE_STACK") == "1"
# The benchmarks the stack supplies (tests/bin's spack stands in for Spack, not for a benchmark).
STACK_BINARIES = ("ior", "mdtest", "h5bench_write", "h5bench_read", "btio")


def standins_needed() -> list[str]:
    """The stand-ins of tests/bin a run would need here: those whose real binary is absent.
    Under IOLAB_REQUIRE_STACK=1 a needed benchmark stand-in fails the test."""
    view = Path(spack_env()) / ".spack-env" / "view" / "bin" if spack_env() else None
    # the local systems run the Spack environment's binaries (setup's note) before PATH's
    missing = sorted(p.name for p in STANDIN_BIN.iterdir()
                     if not have(p.name) and not (view and (view / p.name).exists()))
    absent = [m for m in missing if m in STACK_BINARIES]
    if STACK_REQUIRED and absent:
        pytest.fail(f"IOLAB_REQUIRE_STACK=1 but {', '.join(absent)} not on PATH: the test would "
                    "replay a recording instead of measuring (scripts/setup --spack-bundle DIR)")
    return missing


@pytest.fixture
def rfm_env(tmp_path):
    """Environment for a ReFrame run whose results, stage and scratch live in tmp_path.

    Where a real benchmark is absent, its stand-in from tests/bin (replaying recorded output)
    goes on PATH, so that benchmark's path through the pipeline still runs for real around it.
    """
    return rfm_environment(tmp_path)


def rfm_environment(tmp_path: Path) -> dict:
    """rfm_env's environment, for a fixture of a wider scope."""
    env = dict(os.environ)
    env.update(IOLAB_RESULTS=str(tmp_path / "results"), IOLAB_RFM_OUTPUT=str(tmp_path / "rfm"),
               IOLAB_SCRATCH=str(tmp_path / "scratch"), IOR_STANDIN_LOG=str(tmp_path / "ior-args.log"),
               IOLAB_PROFILE="local")
    # A neutral start: tests that want a stack, Darshan or a project root set them themselves.
    for name in ("IOLAB_ROOT", "IOLAB_STACK_PREFIX", "IOLAB_DARSHAN", "IOLAB_DARSHAN_DXT",
                 "IOLAB_KEEP_DATA"):
        env.pop(name, None)
    # Only the missing binaries are stood in for: a real one on PATH is always used.
    missing = standins_needed()
    if missing:
        bin_dir = tmp_path / "standin-bin"
        bin_dir.mkdir()
        for name in missing:
            (bin_dir / name).symlink_to(STANDIN_BIN / name)
        env["PATH"] = f"{bin_dir}{os.pathsep}{env['PATH']}"
    return env


def spack_env() -> str:
    """The built Spack environment the local systems use (IOLAB_SPACK_ENV, else setup's note)."""
    if "IOLAB_SPACK_ENV" in os.environ:
        return os.environ["IOLAB_SPACK_ENV"]
    note = REPO / SPACK_ENV_NOTE
    return note.read_text().strip() if note.is_file() else ""


def darshan_stack() -> tuple[Path | None, dict]:
    """(libdarshan.so of the stack the runs use, the variables that select that stack): a prefix
    (IOLAB_STACK_PREFIX), else the Spack environment setup built; (None, {}) without either."""
    prefix = os.environ.get("IOLAB_STACK_PREFIX", "")
    if prefix:
        return Path(prefix) / "lib" / "libdarshan.so", {"IOLAB_STACK_PREFIX": prefix}
    env = spack_env()
    if env:
        return Path(env) / ".spack-env" / "view" / "lib" / "libdarshan.so", {"IOLAB_SPACK_ENV": env}
    return None, {}


def need_darshan():
    """Skip where no Darshan runtime is at hand; under IOLAB_REQUIRE_STACK=1 that is a failure
    (the test body asserts the runtime exists)."""
    lib, _ = darshan_stack()
    return pytest.mark.skipif((lib is None or not lib.exists()) and not STACK_REQUIRED,
                              reason="libdarshan.so not found: scripts/setup --spack-bundle DIR, or "
                                     "IOLAB_STACK_PREFIX naming a stack with darshan-runtime")


def without(env: dict, binary: str) -> dict:
    """env with a benchmark absent, for the tests of that path: neither on PATH (nor stood in
    for), nor from the Spack environment setup built (IOLAB_SPACK_ENV= empty: PATH alone)."""
    dirs = [p for p in env["PATH"].split(os.pathsep) if not (p and os.path.exists(os.path.join(p, binary)))]
    return dict(env, PATH=os.pathsep.join(dirs), IOLAB_SPACK_ENV="")


def check_replay_flag(rec: dict, tmp_path: Path) -> None:
    """A case run by a stand-in says which recording it replayed, and is flagged as no
    measurement; a case run by the real binary is not."""
    binary = rec["provenance"]["binary"]["name"]
    replay = rec["observed"].get("replayed")
    flagged = [f for f in rec["flags"] if f.startswith("replayed by a test stand-in")]
    if (tmp_path / "standin-bin" / binary).exists():
        assert replay and replay.startswith("tests/data/replay/") and (REPO / replay).is_dir(), replay
        assert flagged == [f"replayed by a test stand-in: not a measurement ({replay})"]
    else:
        assert replay is None and flagged == []


def reframe(args: list[str], env: dict, cwd: Path = REPO, config: str = "reframe/config/local.py"):
    cmd = [REFRAME, "-C", str(REPO / config), "-c", "reframe/", "-R", *args]
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


def iolab(args: list[str], env: dict, cwd: Path = REPO):
    return subprocess.run([sys.executable, "-m", "iolab.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=300)


def only_run(results: Path, experiment: str) -> Path:
    runs = [p for p in (results / experiment).iterdir() if p.is_dir()]
    assert len(runs) == 1, runs
    return runs[0]


def records(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines() if line]


def make_project(tmp_path: Path, experiments: dict[str, str]) -> Path:
    """A throwaway iolab checkout: the loader, the configs and the given experiment YAMLs."""
    root = tmp_path / "project"
    (root / "reframe").mkdir(parents=True)
    shutil.copy(REPO / "reframe" / "experiments.py", root / "reframe" / "experiments.py")
    shutil.copytree(REPO / "reframe" / "config", root / "reframe" / "config")
    (root / "experiments").mkdir()
    for name, text in experiments.items():
        (root / "experiments" / f"{name}.yaml").write_text(text)
    return root
