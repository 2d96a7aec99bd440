"""End to end through the Spack stack provider, with the `spack` stand-in (tests/bin/spack)
replaying the real Spack 1.1 build recorded in tests/data/spack: ReFrame builds the stack once as
a fixture, each case loads its benchmark from the environment, and the records carry the
spack.lock's sha256; a failed build fails the cases with Spack's own error."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from iolab.experiment.load import load_experiment
from iolab.experiment.matrix import expand

from .conftest import REPO, STANDIN_BIN, have, iolab, only_run, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

DATA = REPO / "tests" / "data" / "spack"
INDEX = json.loads((DATA / "index.json").read_text())
LOCK_SHA = hashlib.sha256((DATA / "spack.lock").read_bytes()).hexdigest()

CONFIG = """\
from iolab.rfm.systems import local_system

site_configuration = local_system('local', 'openmpi-ompio', 'This machine, benchmarks from Spack')
site_configuration['systems'][0]['partitions'][0]['extras']['iolab']['stack'] = {stack!r}
"""


def spack_config(tmp_path: Path, **stack) -> str:
    path = tmp_path / "spack-local.py"
    path.write_text(CONFIG.format(stack={"provider": "spack", "spack_config": "debian12", **stack}))
    return str(path)


@pytest.fixture
def spack_env(rfm_env, tmp_path):
    """The stand-in goes first on PATH even where a real Spack is installed: it replays one
    recorded build, and never builds anything."""
    bin_dir = tmp_path / "spack-standin-bin"
    bin_dir.mkdir()
    (bin_dir / "spack").symlink_to(STANDIN_BIN / "spack")
    rfm_env["PATH"] = f"{bin_dir}{os.pathsep}{rfm_env['PATH']}"
    return rfm_env


def ior_case_names(count: int | None = None) -> list[str]:
    exp = load_experiment(REPO / "experiments" / "quickstart.yaml")
    names = [f"quickstart%case={c.case_id}" for c in expand(exp) if c.benchmark == "ior"]
    return names[:count] if count else names


def test_quickstart_runs_with_the_spack_stack(spack_env, tmp_path):
    config = spack_config(tmp_path, install_opts=["--no-checksum"])
    out = reframe(["-r", "-n", "quickstart"], spack_env, config=config)
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    # one build for the partition and programming environment, before the cases
    assert out.stdout.count("build_iolab_stack") >= 1
    builds = list((tmp_path / "rfm").rglob("build_iolab_stack*/rfm_build.sh"))
    assert len(builds) == 1, builds
    script = builds[0].read_text()
    for line in ("spack -e spackenv config add -f ", "spack -e spackenv concretize",
                 "spack -e spackenv install --fail-fast --no-checksum",
                 "spack -e spackenv find --json > spack-find.json"):
        assert line in script, script
    output = builds[0].parent          # ReFrame keeps the build's script and outputs there
    assert "IOLAB-STANDIN: replaying tests/data/spack/install.out" in (output / "rfm_build.err").read_text()

    run = only_run(tmp_path / "results", "quickstart")
    recs = records(run)
    exp = load_experiment(REPO / "experiments" / "quickstart.yaml")
    assert len(recs) == len(expand(exp)) * exp.repetitions
    assert all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    # the environment's spack.lock is stored with the run, its sha256 in every record
    assert (run / "spack.lock").read_bytes() == (DATA / "spack.lock").read_bytes()
    for rec in recs:
        stack = rec["provenance"]["stack"]
        assert stack["provider"] == "spack" and stack["supplied_by"] == "spack"
        assert stack["spack_lock_sha256"] == LOCK_SHA
        env = stack["spack_env"]
        assert env.endswith(f"/stage/local/default/openmpi/{output.name}/spackenv"), env
        assert stack["versions"] == {"ior": "4.0.0", "fio": "3.33", "btio": "2019-07-21",
                                     "h5bench": "1.6", "darshan-runtime": "3.4.7"}
        job = (run / rec["raw"]["dir"] / "rfm_job.sh").read_text()
        package = {"ior": "ior", "fio": "fio"}[rec["benchmark"]]
        assert f"eval `spack -e {env} load --sh {package}`" in job, job
        if rec["benchmark"] == "ior":
            assert rec["provenance"]["binary"]["version"] == "4.0.0"
        else:   # Debian's fio, an external of the Spack environment
            assert rec["provenance"]["binary"]["path"] == "/usr/bin/fio"

    shown = iolab(["runs", "quickstart", "--stack"], spack_env)
    assert shown.returncode == 0, shown.stderr
    assert f"stack: spack, spack.lock sha256 {LOCK_SHA}" in shown.stdout
    assert "ior ior: 4.0.0, " in shown.stdout and "fio fio: 3.33, /usr/bin/fio (spack)" in shown.stdout


def test_a_failed_spack_build_fails_the_cases_with_spacks_error(spack_env, tmp_path):
    names = ior_case_names(1)
    out = reframe(["-r", *[a for n in names for a in ("-n", n)]], spack_env, config=spack_config(tmp_path))
    assert out.returncode != 0, out.stdout[-4000:]
    assert "PASSED" not in out.stdout.splitlines()[-1]
    error = "Error: ChecksumError: sha256 checksum failed for "
    assert error in out.stdout + out.stderr
    run = only_run(tmp_path / "results", "quickstart")
    recs = records(run)
    assert recs and len(recs) == len(names) * 2     # two repetitions
    for rec in recs:
        assert rec["status"] == "failed"
        assert "the Spack stack (fixture build_iolab_stack" in rec["error"], rec["error"]
        assert f"did not build: {error}" in rec["error"] and "darshan-3.4.7.tar.gz" in rec["error"]
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["finished"]["counts"] == {"failed": len(recs)}
    assert not (run / "spack.lock").exists()
