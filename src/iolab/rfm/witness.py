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
    if shutil.which("sacct") is None:
        return unchecked("sacct is not on PATH")
    # whole seconds, as Slurm keeps them: a job that ended the second the benchmark started
    # (the one before it) is not a witness
    first, last = math.floor(start), math.ceil(end)
    cmd = ["sacct", "-a", "-X", "-n", "-P", "-s", "R", "-S", _stamp(first), "-E", _stamp(last),
           "-N", ",".join(nodes), "-o", ",".join(FIELDS)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60,
                             env={**os.environ, "SLURM_TIME_FORMAT": "%s"})
    except (OSError, subprocess.SubprocessError) as exc:
        return unchecked(f"{' '.join(cmd[:1])}: {exc}")
    if out.returncode != 0:
        return unchecked(f"sacct: {' '.join(out.stderr.split())[:300] or f'exit {out.returncode}'}")
    jobs = []
    for line in out.stdout.splitlines():
        values = line.split("|")
        if len(values) != len(FIELDS):
            continue
        job = dict(zip(("job", "user", "name", "start", "end", "nodes", "state"), values))
        if job["job"] == str(jobid):
            continue
        began, ended = _seconds(job["start"]), _seconds(job["end"])
        if began is None or began >= last or (ended is not None and ended <= first):
            continue
        jobs.append({**job, "start": began, "end": ended})
    return {"checked": True, "by": "sacct", "window": [start, end], "nodes": list(nodes),
            "jobs": jobs}


def of_job(scheduler: str, jobid, nodes: list[str], timing: dict) -> dict | None:
    """The witness part of a case run by `scheduler`; None where there is no such thing to ask
    (a local job: the measurement lock is all there is)."""
    if scheduler not in ("slurm", "squeue"):
        return None
    return overlapping(str(jobid) if jobid is not None else None, nodes,
                       timing.get("benchmark_start"), timing.get("benchmark_end"))


__all__ = ["OVERLAP", "of_job", "overlapping"]
