"""Running a benchmark for real from a RunSpec, as a job would, for tests that skip without it."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def needs(*binaries: str) -> None:
    """Skip the test, naming the binary, when one of them is not on PATH."""
    for binary in binaries:
        if shutil.which(binary) is None:
            pytest.skip(f"{binary!r} is not on PATH")


def run_spec(spec, stage: Path, np: int = 4) -> subprocess.CompletedProcess:
    """Write the spec's files into a new stage directory and run it there under mpirun; stdout
    and stderr go where the benchmark descriptors read them (rfm_job.out, rfm_job.err)."""
    stage.mkdir(parents=True)
    for name, text in spec.files.items():
        (stage / name).write_text(text)
    env = dict(os.environ)
    if os.geteuid() == 0:
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env_args = [a for k, v in spec.env.items() for a in ("-x", f"{k}={v}")]
    done = subprocess.run(["mpirun", "-np", str(np), "--oversubscribe", *env_args, spec.executable,
                           *spec.args], cwd=stage, env=env, capture_output=True, text=True,
                          timeout=300)
    (stage / "rfm_job.out").write_text(done.stdout)
    (stage / "rfm_job.err").write_text(done.stderr)
    return done
