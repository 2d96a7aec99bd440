"""End to end through a real Slurm: quickstart on `localslurm` (scripts/slurm-local up first).

Jobs are submitted with sbatch and polled with sacct by ReFrame's `slurm` backend. fio cases
always run; IOR cases run under `srun` (PMIx) only if `ior` is on PATH, and are recorded as
skipped otherwise. Skipped unless a one-node Slurm from scripts/slurm-local is up.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from .conftest import REPO, SLURM_REQUIRED, have, iolab, records, reframe, slurm_up

SLURM_LOCAL = REPO / "scripts" / "slurm-local"
SYSTEM = "localslurm:debug"


_UP, _WHY = slurm_up()
_REQUIRED = SLURM_REQUIRED

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(not _UP and not _REQUIRED, reason=_WHY),
              pytest.mark.skipif(not have("fio"), reason="fio is not installed")]


# This Slurm's own config: /etc/slurm/slurm.conf may belong to scripts/cluster-local's.
SLURM_ENV = {**os.environ, "SLURM_CONF": os.path.join(os.environ.get("IOLAB_SLURM_STATE", "/tmp/iolab-slurm"),
                                                      "etc", "slurm.conf")}


def _sacct_state(jobid: str) -> str:
    out = subprocess.run(["sacct", "-j", jobid, "-n", "-X", "-o", "State"],
                         capture_output=True, text=True, timeout=60, env=SLURM_ENV)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_quickstart_through_sbatch_and_sacct(rfm_env, tmp_path):
    assert _UP, _WHY
    env = rfm_env  # IOR is the real one, or the replaying stand-in where it is absent

    out = reframe(["-r", "-n", "quickstart"], env, config="reframe/config/localslurm.py")
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]

    runs = sorted(p for p in (tmp_path / "results" / "quickstart").iterdir() if p.is_dir())
    assert runs, "no results run was written"
    recs = records(runs[-1])
    assert recs

    fio = [r for r in recs if r["benchmark"] == "fio"]
    ior = [r for r in recs if r["benchmark"] == "ior"]
    assert fio and all(r["status"] == "ok" for r in fio), [r["error"] for r in fio]
    assert ior and all(r["status"] == "ok" for r in ior), [r["error"] for r in ior]

    ran = [r for r in recs if r["status"] == "ok"]
    for rec in ran:
        prov = rec["provenance"]
        assert prov["system"] == SYSTEM
        assert prov["jobid"], rec["case_id"]
        assert prov["nodelist"], rec["case_id"]
        if rec["benchmark"] == "ior":
            # MPI ranks are started by srun with PMIx (Debian's Open MPI has no PMI2 support):
            # extras['iolab']['launcher_options'], and SLURM_MPI_TYPE for any other srun.
            assert prov["command"].startswith("srun --mpi=pmix ")
            assert prov["env"].get("SLURM_MPI_TYPE") == "pmix"

    # The jobs went through Slurm's accounting, which is what ReFrame's backend polls.
    jobids = {r["provenance"]["jobid"] for r in ran}
    assert len(jobids) == len(ran), "each case ran as its own Slurm job"
    states = {jobid: _sacct_state(jobid) for jobid in sorted(jobids)}
    assert set(states.values()) == {"COMPLETED"}, states

    # The same experiment on `local` has the same case ids, so the systems compare side by side.
    out = reframe(["-r", "-n", "quickstart"], env)
    assert out.returncode == 0, out.stdout[-3000:]
    local_run = next(p for p in (tmp_path / "results" / "quickstart").iterdir()
                     if p != runs[-1] and p.is_dir())
    assert {r["case_id"] for r in records(local_run)} == {r["case_id"] for r in recs}
    cmp = iolab(["compare", "quickstart", runs[-1].name, local_run.name, "--metrics", "write_bw"], env)
    assert cmp.returncode == 0, cmp.stderr
    rows = [line for line in cmp.stdout.splitlines()
            if line.startswith("| ") and "95% CI (MiB/s)" not in line]
    assert len(rows) == len({r["case_id"] for r in recs}), cmp.stdout
    # every case paired: two repetitions on each side (columns n A and n B)
    assert all(line.count("| 2 |") >= 2 for line in rows), cmp.stdout


SLOW = """\
id: slow
description: fio throttled to 1 MiB/s, interrupted while its Slurm job writes
benchmark: fio
repetitions: 2
fixed: {size: 64MiB, bs: 64KiB, extra_args: ["--rate=1m"]}
"""


def test_an_interrupted_slurm_run_cancels_its_job_and_records_every_case(rfm_env, tmp_path):
    import json
    import signal
    import time

    from .conftest import REFRAME, make_project, only_run, sigint_default

    root = make_project(tmp_path, {"slow": SLOW})
    cmd = [REFRAME, "-C", str(root / "reframe" / "config" / "localslurm.py"), "-c", "reframe/", "-R",
           "-r", "-n", "slow"]
    proc = subprocess.Popen(cmd, cwd=root, env=rfm_env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, preexec_fn=sigint_default)
    deadline = time.monotonic() + 300
    while not any(p.is_file() for p in (tmp_path / "scratch").rglob("*")):
        assert time.monotonic() < deadline and proc.poll() is None, "the job never started writing"
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    out = proc.communicate(timeout=120)[0]
    assert proc.returncode != 0, out[-2000:]
    run = only_run(tmp_path / "results", "slow")
    recs = records(run)
    assert sorted(r["repetition"] for r in recs) == [1, 2]
    assert {(r["status"], r["error"]) for r in recs} == {("aborted", "interrupted by SIGINT")}
    jobid = next(r["provenance"]["jobid"] for r in recs if r["provenance"]["jobid"])
    queue = subprocess.run(["squeue", "-h", "-j", jobid], capture_output=True, text=True,
                           env=SLURM_ENV).stdout
    assert not queue.strip(), f"job {jobid} still queued or running: {queue}"
    assert json.loads((run / "manifest.json").read_text())["finished"]["complete"] is False
    assert not any(p.is_file() for p in (tmp_path / "scratch").rglob("*"))


# About 12 s of writing (fio's --rate): the job still runs when its session is killed.
KILLED = """\
id: killed
description: fio throttled to 1 MiB/s, its session killed with SIGKILL while its Slurm job writes
benchmark: fio
repetitions: 1
fixed: {size: 12MiB, bs: 64KiB, extra_args: ["--rate=1m"]}
"""


def _sacct_window(jobid: str) -> tuple[int, int, str]:
    """(start, end, state) of a job, as Slurm's accounting keeps them (unix seconds)."""
    out = subprocess.run(["sacct", "-j", jobid, "-n", "-X", "-P", "-o", "Start,End,State"],
                         capture_output=True, text=True, timeout=60,
                         env={**SLURM_ENV, "SLURM_TIME_FORMAT": "%s"})
    assert out.returncode == 0, out.stderr
    start, end, state = out.stdout.strip().split("|")
    return int(start), int(end), state.split()[0]


def _kill_while_its_job_writes(rfm_env, tmp_path):
    """A real run of KILLED on localslurm, SIGKILLed once its job writes: (project, env for the
    CLI, the dead run's directory, the id of its Slurm job, still running)."""
    import time

    from .conftest import REFRAME, make_project, only_run, sigkill

    root = make_project(tmp_path, {"killed": KILLED})
    env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"),
               IOLAB_LOCK_DIR=str(tmp_path / "locks"))
    cmd = [REFRAME, "-C", str(root / "reframe" / "config" / "localslurm.py"), "-c", "reframe/", "-R",
           "-r", "-n", "killed"]
    with open(tmp_path / "reframe.out", "w") as log:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 300
            while not any(p.is_file() for p in (tmp_path / "scratch").rglob("*")):
                assert time.monotonic() < deadline and proc.poll() is None, \
                    (tmp_path / "reframe.out").read_text()[-3000:]
                time.sleep(0.2)
        finally:
            sigkill(proc)
    run = only_run(tmp_path / "results", "killed")
    assert not (run / "records.jsonl").exists() or not records(run)
    # the dead session's job, found by its working directory (a stage directory of this test)
    queue = subprocess.run(["squeue", "-h", "-o", "%i|%T|%Z"], capture_output=True, text=True,
                           env=SLURM_ENV, timeout=60).stdout.split()
    (jobid, state) = next(line.split("|")[:2] for line in queue if str(tmp_path) in line)
    assert state == "RUNNING", queue
    return root, env, run, jobid


def test_resume_after_a_sigkill_waits_for_the_dead_runs_job(rfm_env, tmp_path):
    root, env, dead, jobid = _kill_while_its_job_writes(rfm_env, tmp_path)

    # no waiting allowed: refused, naming the job and why, and no run is made
    out = iolab(["resume", "killed"], dict(env, IOLAB_MEASURE_WAIT="0"), cwd=root)
    text = out.stdout + out.stderr
    assert out.returncode != 0, text[-3000:]
    assert f"Slurm job {jobid} (RUNNING; killed run {dead.name} case" in text, text[-3000:]
    assert "not started, so that no measurement overlaps them" in text, text[-3000:]
    assert len([p for p in (tmp_path / "results" / "killed").iterdir() if p.is_dir()]) == 1

    out = iolab(["resume", "killed"], env, cwd=root)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert f"Slurm job {jobid} (RUNNING" in text and "waiting for them to end" in text, text[-3000:]
    (cont,) = [p for p in (tmp_path / "results" / "killed").iterdir() if p.is_dir() and p != dead]
    (rec,) = records(cont)
    assert rec["status"] == "ok", rec["error"]
    # measured after the dead run's job had ended, as Slurm's accounting saw both
    _, dead_end, dead_state = _sacct_window(jobid)
    start, _, _ = _sacct_window(rec["provenance"]["jobid"])
    assert dead_state == "COMPLETED" and start >= dead_end, (dead_end, start)
    # no other job on its node while it measured: checked, and nothing to flag
    witness = rec["observed"]["overlapping_jobs"]
    assert witness["checked"] is True and witness["jobs"] == [], witness
    assert rec["flags"] == [], rec["flags"]
    # the dead run's scratch directory, emptied by its job's end, is gone too
    assert not (tmp_path / "scratch" / "killed" / dead.name).exists()
    assert not (tmp_path / "scratch" / "killed" / cont.name).exists()


def test_resume_cancel_stale_cancels_the_dead_runs_job(rfm_env, tmp_path):
    root, env, dead, jobid = _kill_while_its_job_writes(rfm_env, tmp_path)
    out = iolab(["resume", "killed", "--cancel-stale"], env, cwd=root)
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    assert f"Slurm job {jobid} (RUNNING" in text and "cancelling them" in text, text[-3000:]
    (cont,) = [p for p in (tmp_path / "results" / "killed").iterdir() if p.is_dir() and p != dead]
    (rec,) = records(cont)
    _, dead_end, dead_state = _sacct_window(jobid)
    start, _, _ = _sacct_window(rec["provenance"]["jobid"])
    assert dead_state == "CANCELLED" and start >= dead_end, (dead_state, dead_end, start)
    assert rec["status"] == "ok" and rec["flags"] == [], (rec["error"], rec["flags"])


QUICK = """\
id: quick
description: one short fio job
benchmark: fio
repetitions: 1
fixed: {size: 4MiB, bs: 64KiB}
"""


def test_a_job_beside_the_case_is_a_witness_flagged_on_the_row(rfm_env, tmp_path):
    import json
    import time

    from .conftest import make_project, only_run

    root = make_project(tmp_path, {"quick": QUICK})
    other = subprocess.run(["sbatch", "--parsable", "-J", "neighbour", "-n", "1", "-o", "/dev/null",
                            "--wrap", "sleep 120"], capture_output=True, text=True, timeout=60,
                           env=SLURM_ENV, cwd=tmp_path)
    assert other.returncode == 0, other.stderr
    neighbour = other.stdout.strip().split(";")[0]
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["squeue", "-h", "-j", neighbour, "-o", "%T"], capture_output=True,
                             text=True, env=SLURM_ENV).stdout.strip() != "RUNNING":
            assert time.monotonic() < deadline, f"job {neighbour} never ran"
            time.sleep(0.5)
        out = reframe(["-r", "-n", "quick"], dict(rfm_env, IOLAB_LOCK_DIR=str(tmp_path / "locks")),
                      cwd=root, config=str(root / "reframe" / "config" / "localslurm.py"))
    finally:
        subprocess.run(["scancel", neighbour], env=SLURM_ENV, timeout=60)
    assert out.returncode == 0, out.stdout[-3000:]
    (rec,) = records(only_run(tmp_path / "results", "quick"))
    witness = rec["observed"]["overlapping_jobs"]
    assert witness["checked"] is True, witness
    assert [(j["job"], j["name"], j["nodes"]) for j in witness["jobs"]] == [
        (neighbour, "neighbour", "localhost")], witness
    (flag,) = rec["flags"]
    assert flag.startswith(f"other jobs shared its nodes while it measured: job {neighbour} (")
    env = dict(rfm_env, IOLAB_ROOT=str(root), IOLAB_TEMPLATES=str(REPO / "templates"))
    table = iolab(["table", "quick"], env, cwd=root)
    assert table.returncode == 0, table.stderr
    assert f"other jobs shared its nodes while it measured: job {neighbour}" in table.stdout, table.stdout
    rows = json.loads(iolab(["table", "quick", "--format", "json"], env, cwd=root).stdout)
    assert any("other jobs shared its nodes" in str(r) for r in rows), rows
