"""A burst buffer's path end to end: the system config places cases under a variable that only the
job script sets (as DataWarp sets $DW_JOB_STRIPED), and a real `reframe -r` runs every benchmark
that takes a path there: fio for real; IOR, mdtest, h5bench and BTIO through their stand-ins
where absent, which refuse a path with a literal `$`. Each must write under the expanded path."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from .conftest import check_replay_flag, have, make_project, only_run, records, reframe

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not have("mpirun"), reason="mpirun (Open MPI) is not installed"),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]

VAR = "IOLAB_AUDIT_BB"

# A local system whose burst buffer is a variable set in the job script alone (the partition's
# env_vars become `export` lines of the job, as written: shell text; the reframe process never
# has it).
CONFIG = """\
from iolab.rfm.systems import local_system

site_configuration = local_system('local', {flavour!r}, 'job-time burst buffer')
_part = site_configuration['systems'][0]['partitions'][0]
_part['env_vars'] = [*_part['env_vars'], [{var!r}, {value!r}]]
_part['extras']['iolab']['burst_buffer'] = '${var}/bb'
"""

# The parameters of recorded runs (tests/data/replay), on the burst buffer.
PATHS = """\
id: job-time-paths
description: every benchmark that takes a path, writing under a variable set only in the job
repetitions: 1
parts:
  fio:
    benchmark: fio
    fixed: {storage: burst_buffer, size: 1MiB, bs: 64KiB}
  ior:
    benchmark: ior
    scale: {nodes: 1, tasks_per_node: 2}
    fixed: {storage: burst_buffer, api: POSIX, file_per_process: true, transfer_size: 1MiB,
            block_size: 8MiB, iterations: 2, fsync: true}
  mdtest:
    benchmark: mdtest
    scale: {nodes: 1, tasks_per_node: 2}
    fixed: {storage: burst_buffer, items: 50, depth: 2, branching: 2, iterations: 2}
  h5bench:
    benchmark: h5bench
    scale: {nodes: 1, tasks_per_node: 4}
    fixed: {storage: burst_buffer, timesteps: 3, dim_1: 262144, num_dims: 1, collective_data: true,
            collective_metadata: true}
    matrix:
      kernel: [write, read]
"""

BTIO = """\
id: job-time-btio
description: BTIO's deck naming a directory under a variable set only in the job
repetitions: 1
benchmark: btio
scale: {nodes: 1, tasks_per_node: 4}
fixed: {storage: burst_buffer, mode: write, io_method: pnetcdf_blocking, time_steps: 5,
        grid: [64, 64, 64]}
"""


@pytest.mark.parametrize("experiment, text, flavour", [
    ("job-time-paths", PATHS, "openmpi-ompio"),
    ("job-time-btio", BTIO, "openmpi-romio"),       # BTIO's recordings are ROMIO's
])
def test_every_benchmark_writes_under_the_path_the_job_expanded(rfm_env, tmp_path, experiment, text,
                                                                   flavour):
    assert VAR not in rfm_env
    bb = tmp_path / "burst buffer"
    bb.mkdir()
    root = make_project(tmp_path, {experiment: text})
    config = root / "reframe" / "config" / "jobtime.py"
    config.write_text(CONFIG.format(flavour=flavour, var=VAR, value=shlex.quote(str(bb))))
    env = dict(rfm_env, IOLAB_KEEP_DATA="1")       # keep the data, to see where it went
    out = reframe(["-r", "-n", experiment.replace("-", "_")], env, cwd=root, config=str(config))
    assert out.returncode == 0, out.stdout[-4000:]
    recs = records(only_run(tmp_path / "results", experiment))
    assert recs and all(r["status"] == "ok" for r in recs), [r["error"] for r in recs]
    for rec in recs:
        check_replay_flag(rec, tmp_path)
        # planned with the variable, expanded by the job (as the job itself printed it)
        planned, seen = rec["provenance"]["case_dir"], rec["observed"]["storage"]["path"]
        assert planned.startswith(f"${VAR}/bb/{experiment}/"), planned
        assert seen == planned.replace(f"${VAR}", str(bb)), seen
    # each case's directory was made where the job expanded it, and every writer's data is in it
    # (mdtest removes its files, a read writes none); none is under a literal '$IOLAB_AUDIT_BB'
    for rec in recs:
        assert Path(rec["observed"]["storage"]["path"]).is_dir()
    written = {p.relative_to(bb).parts[3].split("-r")[0] for p in bb.rglob("*") if p.is_file()}
    writers = {r["case_id"] for r in recs
               if r["benchmark"] != "mdtest" and r["params"].get("kernel") != "read"}
    assert written == writers, (written, writers)
    assert not list(tmp_path.rglob(f"${VAR}*"))
    scripts = [p.read_text() for p in (tmp_path / "rfm").rglob("rfm_job.sh")]
    assert scripts and all(f"export {VAR}=" in s for s in scripts)
    if experiment == "job-time-paths":
        benchmarks = {r["benchmark"] for r in recs}
        assert benchmarks == {"fio", "ior", "mdtest", "h5bench"}
        ior = next(s for s in scripts if "\nmpirun" in s and " ior " in s)
        assert f'-o "${VAR}"' in ior, "IOR's -o expands the variable as mkdir does"


def test_a_job_lacking_the_variable_stops_before_writing_under_root(rfm_env, tmp_path):
    """The variable never set: the case fails with the reason, and nothing is made at '/...'."""
    leaf = f"iolab-unset-{tmp_path.name}"
    text = ("id: job-time-unset\ndescription: a burst buffer whose variable the job never gets\n"
            "benchmark: fio\nfixed: {storage: burst_buffer, size: 64KiB, bs: 4KiB}\n")
    root = make_project(tmp_path, {"job-time-unset": text})
    config = root / "reframe" / "config" / "jobtime.py"
    # the job exports another variable; the burst buffer names one it never sets
    config.write_text(CONFIG.format(flavour="openmpi-ompio", var="IOLAB_OTHER", value="x")
                      .replace("'$IOLAB_OTHER/bb'", f"'$IOLAB_NEVER_SET/{leaf}'"))
    assert "IOLAB_NEVER_SET" not in rfm_env
    out = reframe(["-r", "-n", "job_time_unset"], rfm_env, cwd=root, config=str(config))
    assert out.returncode != 0
    (rec,) = records(only_run(tmp_path / "results", "job-time-unset"))
    assert rec["status"] == "failed"
    assert rec["error"].startswith(
        f"the case directory $IOLAB_NEVER_SET/{leaf}/job-time-unset/"), rec["error"]
    assert "needs $IOLAB_NEVER_SET, which is not set in the job" in rec["error"]
    assert not Path(f"/{leaf}").exists()
