"""Allocation mode on the 4-node namespace cluster (scripts/cluster-local): a campaign's jobs as
srun steps of one allocation, from `salloc -N 4` and from `iolab submit`, set against the same
campaign as one Slurm job per case; and an allocation too short for the campaign, which ends with
the resume line and no half-run case, and `iolab resume` in a second allocation completing it.

Real IOR (the Spack stack) where it is built, small sizes: a minute or so per test.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from .conftest import (REPO, darshan_stack, iolab, make_project, need_darshan, only_run, records,
                       reframe)
from .test_cluster_local import REQUIRED, WHY
from tests.tools.backlog import Backlog, waits

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(WHY is not None and not REQUIRED, reason=WHY or "")]

EXP = "alloc-shapes"
SHAPES = """\
id: alloc-shapes
description: IOR on 1, 2 and 4 nodes, as jobs of their own or as steps of one allocation
benchmark: ior
scale: {tasks_per_node: 2}
job: {time_limit: 1m}
fixed: {api: MPIIO, collective: true, transfer_size: 1MiB, block_size: 1MiB}
matrix:
  scale.nodes: [1, 2, 4]
repetitions: 2
"""
CONFIG = "reframe/config/localcluster.py"
SELECT = ["-r", "-n", EXP.replace("-", "_")]


def _queued(env: dict) -> set[str]:
    out = subprocess.run(["squeue", "-h", "-o", "%i"], env=env, capture_output=True, text=True,
                         timeout=60)
    return set(out.stdout.split())


@pytest.fixture(autouse=True)
def _cancel_what_the_test_left(rfm_env):
    """The allocations and batch jobs a test started and left queued or running (a timeout, a
    failed assertion before the end) are cancelled by id: the next test finds the nodes free."""
    env = _env(rfm_env)
    before = _queued(env) if WHY is None else set()
    yield
    if WHY is None:
        left = sorted(_queued(env) - before)
        if left:
            subprocess.run(["scancel", *left], env=env, capture_output=True, timeout=60)


def _env(rfm_env: dict) -> dict:
    state = os.environ.get("IOLAB_CLUSTER_STATE", "/tmp/iolab-cluster")
    env = dict(rfm_env, SLURM_CONF=os.path.join(state, "etc", "slurm.conf"))
    env.pop(ALLOC, None)
    return env


ALLOC = "IOLAB_IN_ALLOCATION"


def _project(tmp_path: Path, experiments: dict | None = None) -> Path:
    root = make_project(tmp_path, experiments or {EXP: SHAPES})
    (root / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "run", root / "scripts" / "run")    # what the batch job runs
    (root / "templates").symlink_to(REPO / "templates")      # the shim's, with IOLAB_ROOT here
    return root


def _salloc(env: dict, root: Path, minutes: int, command: list[str], extra=None):
    return subprocess.run(["salloc", "-N", "4", "--exclusive", "-t", str(minutes), "env",
                           *(f"{k}={v}" for k, v in (extra or {}).items()), *command],
                          cwd=root, env=env, capture_output=True, text=True, timeout=900)


def _runs(results: Path, exp_id: str = EXP) -> list[Path]:
    return sorted(p for p in (results / exp_id).iterdir() if p.is_dir())


# what differs between two runs of one campaign whatever the mode (ids, clocks, paths of the
# run, the measured values) and what says the mode (how the job was launched, which job)
RUN_FIELDS = ("run_id", "recorded", "raw", "chain")
PROVENANCE_FIELDS = ("jobid", "timing", "stagedir", "case_dir", "command", "mode", "allocation")


def _comparable(rec: dict) -> dict:
    run_id = rec["run_id"]      # in the case's directory
    rec = {k: v for k, v in rec.items() if k not in RUN_FIELDS}
    rec["metrics"] = sorted((m["name"], m["unit"]) for m in rec["metrics"])
    rec["provenance"] = {k: v for k, v in rec["provenance"].items() if k not in PROVENANCE_FIELDS}
    seen = rec["observed"].get("overlapping_jobs")
    if seen:
        rec["observed"]["overlapping_jobs"] = {k: seen[k] for k in ("checked", "jobs", "nodes")}
    return json.loads(json.dumps(rec, sort_keys=True).replace(run_id, "RUN"))


def _table_shape(env: dict, root: Path, run: Path) -> list[str]:
    out = iolab(["table", EXP, "--run", run.name], env, cwd=root)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if line.startswith("|")]
    return [line.split("|")[1] for line in rows] + [rows[0]]


def test_steps_of_one_allocation_record_what_jobs_record(rfm_env, tmp_path):
    """The same campaign as one Slurm job per case and as steps of `salloc -N 4`: the records
    are equal in every field but timing, ids and mode, the steps ran on as many nodes as their
    case asks (the allocation's first ones), the witnesses checked them, and the table has
    the same rows and columns."""
    assert WHY is None, WHY
    root, env = _project(tmp_path), _env(rfm_env)
    env["IOLAB_ROOT"] = str(root)
    jobs = reframe(SELECT, env, cwd=root, config=CONFIG)
    assert jobs.returncode == 0, jobs.stdout[-3000:]
    steps = _salloc(env, root, 10, ["scripts/run", "--in-allocation", EXP, "localcluster"])
    assert steps.returncode == 0, steps.stdout[-3000:] + steps.stderr[-2000:]
    job_run, step_run = _runs(tmp_path / "results")
    by_job, by_step = records(job_run), records(step_run)
    assert len(by_job) == len(by_step) == 6
    assert {r["provenance"]["mode"] for r in by_job} == {"job"}
    allocations = {r["provenance"]["allocation"] for r in by_step}
    assert {r["provenance"]["mode"] for r in by_step} == {"allocation"} and len(allocations) == 1
    assert allocations != {None} and allocations.isdisjoint(r["provenance"]["jobid"] for r in by_step)
    for rec in by_step:
        nodes = rec["params"]["scale.nodes"]
        assert rec["status"] == "ok", rec["error"]
        assert rec["provenance"]["nodelist"] == [f"node{k}" for k in range(1, nodes + 1)]
        assert f"--nodes={nodes} " in rec["provenance"]["command"]
        assert rec["observed"]["overlapping_jobs"]["checked"], rec["observed"]["overlapping_jobs"]
    # blocks, as in job mode: every case's repetition 1 before any repetition 2
    assert [r["repetition"] for r in by_step] == [1, 1, 1, 2, 2, 2]
    key = lambda r: (r["case_id"], r["repetition"])      # noqa: E731
    for a, b in zip(sorted(by_job, key=key), sorted(by_step, key=key)):
        assert _comparable(a) == _comparable(b)
    assert _table_shape(env, root, job_run) == _table_shape(env, root, step_run)


FIO = """\
id: alloc-fio
description: fio, which is not an MPI program, as a one-task step of an allocation
benchmark: fio
job: {time_limit: 1m}
fixed: {size: 1MiB, bs: 64KiB, rw: write}
"""


def _steps(env: dict, allocation: str) -> list[list[str]]:
    """[job name, node list] of each srun step of an allocation, as Slurm accounted them."""
    out = subprocess.run(["sacct", "-n", "-P", "-j", allocation, "-o", "JobID,JobName,NodeList"],
                         env=env, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    rows = [line.split("|") for line in out.stdout.split()]
    return [row[1:] for row in rows if row[0].partition(".")[2].isdigit()]   # not .extern


@need_darshan()
def test_a_program_that_is_not_mpi_is_a_step_on_the_allocation_s_first_node(rfm_env, tmp_path):
    """fio inside salloc: a one-task srun step on node1, where job mode runs it (the job's first
    node), under Darshan; not a process of the host, where ReFrame runs."""
    assert WHY is None, WHY
    lib, stack = darshan_stack()
    assert lib is not None and lib.exists(), "no libdarshan.so: scripts/setup --spack-bundle DIR"
    root, env = _project(tmp_path, {"alloc-fio": FIO}), _env(rfm_env)
    env.update(stack, IOLAB_ROOT=str(root), IOLAB_DARSHAN="1")
    steps = _salloc(env, root, 10, ["scripts/run", "--in-allocation", "alloc-fio", "localcluster"])
    assert steps.returncode == 0, steps.stdout[-3000:] + steps.stderr[-2000:]
    (rec,) = records(only_run(tmp_path / "results", "alloc-fio"))
    assert rec["status"] == "ok", rec["error"]
    assert rec["provenance"]["mode"] == "allocation"
    assert rec["provenance"]["nodelist"] == ["node1"] != [socket.gethostname()]
    assert rec["provenance"]["command"].startswith("srun ")
    assert "--ntasks=1 " in rec["provenance"]["command"], rec["provenance"]["command"]
    assert rec["observed"]["darshan"]["status"] == "ok", rec["observed"]["darshan"]   # its log read
    assert rec["observed"]["overlapping_jobs"]["checked"], rec["observed"]["overlapping_jobs"]
    # what Slurm says ran where: one step, on node1
    assert [node for _, node in _steps(env, rec["provenance"]["allocation"])] == ["node1"]


def test_submit_runs_the_campaign_in_one_batch_job(rfm_env, tmp_path):
    """`iolab submit` writes a batch job that runs the campaign inside it: every job is a step
    of that one job, in the seeded order, and ok, and the witnesses checked each."""
    assert WHY is None, WHY
    root, env = _project(tmp_path), _env(rfm_env)
    env["IOLAB_ROOT"] = str(root)
    out = iolab(["submit", EXP, "localcluster", "--nodes", "4", "--time", "10"], env, cwd=root)
    assert out.returncode == 0, out.stderr
    jobid = out.stdout.split()[3].rstrip(":")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        queued = subprocess.run(["squeue", "-h", "-j", jobid], env=env, capture_output=True, text=True)
        if not queued.stdout.strip():
            break
        time.sleep(2)
    (run,) = _runs(tmp_path / "results")
    recs = records(run)
    assert [r["status"] for r in recs] == ["ok"] * 6, [(r["status"], r["error"]) for r in recs]
    assert {(r["provenance"]["mode"], r["provenance"]["allocation"]) for r in recs} == {("allocation", jobid)}
    # ReFrame ran on node1 inside the batch job: its sacct reached slurmdbd over the bridge
    for rec in recs:
        assert rec["observed"]["overlapping_jobs"]["checked"], rec["observed"]["overlapping_jobs"]
    assert json.loads((run / "manifest.json").read_text())["finished"]["complete"]


SHORT = "alloc-short"
# In the matrix's order: the quick part's 4 jobs (1-minute limits) fit a 3-minute allocation
# whatever their speed; the long part's (4-minute limits) never do. So the clock stops the run
# at the long part's first job, on a loaded machine or an idle one.
SHORT_YAML = """\
id: alloc-short
description: quick jobs that fit a 3-minute allocation, then jobs whose limit does not
order: matrix
repetitions: 2
parts:
  quick:
    benchmark: ior
    scale: {tasks_per_node: 2}
    job: {time_limit: 1m}
    fixed: {api: MPIIO, collective: true, transfer_size: 1MiB, block_size: 1MiB}
    matrix: {scale.nodes: [1, 2]}
  long:
    benchmark: ior
    scale: {nodes: 4, tasks_per_node: 2}
    job: {time_limit: 4m}
    fixed: {api: MPIIO, collective: true, transfer_size: 1MiB, block_size: 1MiB}
"""


def test_a_short_allocation_ends_resumable_and_resume_completes(rfm_env, tmp_path):
    """An allocation of 3 minutes: the quick part's jobs run, the session stops before the
    first job whose 4-minute limit would outlive the allocation, exits non-zero with the resume
    line, records the jobs it did not start as aborted (never half-run: no case directory is
    left), and `iolab resume --in-allocation` in a second allocation completes the chain."""
    assert WHY is None, WHY
    root, env = _project(tmp_path, {SHORT: SHORT_YAML}), _env(rfm_env)
    env["IOLAB_ROOT"] = str(root)
    short = _salloc(env, root, 3, ["scripts/run", "--in-allocation", SHORT, "localcluster"])
    assert short.returncode != 0, short.stdout[-3000:]
    (run,) = _runs(tmp_path / "results", SHORT)
    recs = records(run)
    left = [r for r in recs if r["status"] != "ok"]
    assert [r["status"] for r in recs if r["part"] == "quick"] == ["ok"] * 4, short.stdout[-3000:]
    assert len(left) == 2 and {r["part"] for r in left} == {"long"}
    assert f"job(s) left: iolab resume {SHORT} {run.name} --in-allocation" in short.stdout
    for rec in left:
        assert rec["status"] == "aborted" and rec["error"].startswith("not started: allocation "), rec
        assert not Path(rec["provenance"]["stagedir"], "iolab-times.txt").exists(), "a half-run case"
    assert not any((tmp_path / "scratch").rglob("*-r[0-9]*")), "a case directory was left"
    finished = json.loads((run / "manifest.json").read_text())["finished"]
    assert not finished["complete"] and finished["reason"].startswith("not started: allocation")
    again = _salloc(env, root, 10, [str(Path(os.environ.get("VIRTUAL_ENV", "")) / "bin" / "iolab")
                                    if os.environ.get("VIRTUAL_ENV") else "iolab",
                                    "resume", SHORT, "--in-allocation"])
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-2000:]
    assert "chain complete" in again.stdout
    new = [p for p in _runs(tmp_path / "results", SHORT) if p != run]
    assert len(records(new[0])) == len(left)


# the competing user's jobs: each holds all 4 nodes this long, one always queued ahead
BACKLOG_SECONDS = 8


def test_under_a_backlog_job_mode_waits_at_every_job_and_allocation_mode_once(rfm_env, tmp_path):
    """With another user's jobs always queued ahead (tests/tools/backlog.py), the 6 jobs of the
    campaign as jobs of their own each wait behind one of them (Slurm's Submit to Start, over the
    backlog job's length); as steps of `salloc -N 4` the campaign waits once. Prints the waits
    and each mode's wall time (docs/campaigns.md has the figures)."""
    assert WHY is None, WHY
    root, env = _project(tmp_path), _env(rfm_env)
    env["IOLAB_ROOT"] = str(root)
    with Backlog(env, nodes=4, depth=1, seconds=BACKLOG_SECONDS):
        start = time.monotonic()
        jobs = reframe(SELECT, env, cwd=root, config=CONFIG)
        job_wall = time.monotonic() - start
        start = time.monotonic()
        steps = _salloc(env, root, 10, ["scripts/run", "--in-allocation", EXP, "localcluster"])
        step_wall = time.monotonic() - start
    assert jobs.returncode == 0, jobs.stdout[-3000:]
    assert steps.returncode == 0, steps.stdout[-3000:] + steps.stderr[-2000:]
    job_run, step_run = _runs(tmp_path / "results")
    job_ids = [r["provenance"]["jobid"] for r in records(job_run)]
    allocations = sorted({r["provenance"]["allocation"] for r in records(step_run)})
    by_job, by_allocation = waits(env, job_ids), waits(env, allocations)
    print(f"backlog: 1 job of 4 nodes x {BACKLOG_SECONDS} s always queued ahead")
    for mode, waited, wall in (("job", by_job, job_wall), ("allocation", by_allocation, step_wall)):
        print(f"{mode} mode: {len(waited)} queue wait(s) of {sorted(waited.values())} s; "
              f"wall time {wall:.0f} s")
    # sacct's clock is in whole seconds
    assert len(job_ids) == 6 and len(by_job) == 6, by_job
    assert all(w >= BACKLOG_SECONDS - 1 for w in by_job.values()), by_job
    assert len(allocations) == 1 and len(by_allocation) == 1, by_allocation
    assert all(w >= BACKLOG_SECONDS - 1 for w in by_allocation.values()), by_allocation
