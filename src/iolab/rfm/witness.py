"""Other jobs that shared a case's nodes while it measured, as Slurm's accounting tells.

The measurement lock (measuring.py) keeps iolab's own sessions apart; nothing keeps another
user's job (or a job submitted by hand) off a case's nodes. After each Slurm job, sacct is asked
for the jobs that were running on any of its nodes during the benchmark's own start and end; each
other one is a witness kept in the record (observed.overlapping_jobs) and flagged on the row.
Where that cannot be asked, the record says the check was not done, never that nothing overlapped.
"""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import time

from ..results.record import OVERLAP
from .leftovers import QUEUED_BY_SLURM
from .recording import expand_nodelist

FIELDS = ("JobID", "User", "JobName", "Start", "End", "NodeList", "State")


def _stamp(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(t))


def _seconds(text: str) -> int | None:
    return int(text) if text.isdigit() else None        # "Unknown": still running


def overlapping(jobid: str | None, nodes: list[str], start, end) -> dict:
    """observed.overlapping_jobs of a case whose job `jobid` ran on `nodes` and whose benchmark
    ran from `start` to `end` (unix seconds): {"checked": true, "jobs": [...]} or
    {"checked": false, "reason": ...}."""
    def unchecked(why: str) -> dict:
        return {"checked": False, "reason": why}

    if not nodes:
        return unchecked("the job's nodes are not known")
    if not all(isinstance(t, (int, float)) and math.isfinite(t) for t in (start, end)):
        return unchecked("the benchmark's start and end are not known")
    # whole seconds, as Slurm keeps them: a job that ended the second the benchmark started
    # (the one before it) is not a witness
    first, last = math.floor(start), math.ceil(end)
    cmd = ["sacct", "-a", "-X", "-n", "-P", "-s", "R", "-S", _stamp(first), "-E", _stamp(last),
           "-N", ",".join(nodes), "-o", ",".join(FIELDS)]
    rows, why = _ask(cmd)
    if why:
        return unchecked(why)
    # slurmdbd can be seconds behind (a job that started then can still read PENDING there):
    # slurmctld's own view adds the jobs on the nodes now
    # (filtered here: squeue -w refuses a node named localhost)
    now, why = _ask(["squeue", "-h", "-a", "-t", "RUNNING,COMPLETING", "-o", "%i|%u|%j|%S|%e|%N|%T"])
    if why:
        return unchecked(why)
    now = [v for v in now if set(expand_nodelist(v[5])) & set(nodes)]
    jobs = {}
    for values in rows + [v[:4] + ["Unknown"] + v[5:] for v in now]:
        job = dict(zip(("job", "user", "name", "start", "end", "nodes", "state"), values))
        if job["job"] == str(jobid) or job["job"] in jobs:
            continue
        began, ended = _seconds(job["start"]), _seconds(job["end"])
        if began is None or began >= last or (ended is not None and ended <= first):
            continue
        jobs[job["job"]] = {**job, "start": began, "end": ended}
    return {"checked": True, "by": "sacct, squeue", "window": [start, end], "nodes": list(nodes),
            "jobs": list(jobs.values())}


def _ask(cmd: list[str]) -> tuple[list[list[str]], str | None]:
    """The lines of a Slurm query, split at '|' (times as unix seconds); or why it gave none."""
    if shutil.which(cmd[0]) is None:
        return [], f"{cmd[0]} is not on PATH"
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "SLURM_TIME_FORMAT": "%s"})
    except (OSError, subprocess.SubprocessError) as exc:
        return [], f"{cmd[0]}: {exc}"
    if out.returncode != 0:
        return [], f"{cmd[0]}: {' '.join(out.stderr.split())[:300] or f'exit {out.returncode}'}"
    rows = [line.split("|") for line in out.stdout.splitlines()]
    return [r for r in rows if len(r) == len(FIELDS)], None


def of_job(scheduler: str, jobid, nodes: list[str], timing: dict) -> dict | None:
    """The witness part of a case run by `scheduler`; None where there is no such thing to ask
    (a local job: the measurement lock is all there is)."""
    if scheduler not in QUEUED_BY_SLURM:
        return None
    return overlapping(str(jobid) if jobid is not None else None, nodes,
                       timing.get("benchmark_start"), timing.get("benchmark_end"))


__all__ = ["OVERLAP", "of_job", "overlapping"]
