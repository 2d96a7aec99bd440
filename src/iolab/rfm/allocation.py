"""Allocation mode: a campaign's cases as `srun` steps inside one Slurm allocation (salloc, or
the batch job `iolab submit` writes), instead of one Slurm job, and one queue wait, per case.

IOLAB_IN_ALLOCATION=1 (scripts/run --in-allocation) turns a system's Slurm partition into one
whose scheduler runs the job script in place (ReFrame's `local`) with `srunalloc` as launcher:
the step gets the case's task count, tasks per node, time limit and exclusivity from ReFrame, and
iolab adds its node count and which nodes (the allocation's first N, so that the record and the
witnesses name the step's nodes, not the allocation's). The system and partition keep their
names; a record says which mode ran and in which allocation (provenance.mode, .allocation).

The allocation's clock: before each step, Slurm is asked for the time left; a step whose time
limit, plus a reserve for iolab's work after it, does not fit is not started. The session then
ends as an interrupted one does (every job not run is recorded aborted, with why), exits
non-zero, and says how to go on: `iolab resume ... --in-allocation` in a new allocation.

No ReFrame import at load: the configuration files use `partition()`.
"""

from __future__ import annotations

import os
import re
import subprocess

from .. import shell

ENV = "IOLAB_IN_ALLOCATION"
# seconds kept at the allocation's end for iolab's work after a step (records, witnesses)
RESERVE_ENV = "IOLAB_ALLOCATION_RESERVE"
RESERVE = 30
LAUNCHER = "srunalloc"
JOB, ALLOCATION = "job", "allocation"
STEP_NODES = "iolab_step_nodes"


def wanted(environ=None) -> bool:
    environ = os.environ if environ is None else environ
    return environ.get(ENV, "").strip() not in ("", "0")


def partition(part: dict, error=ValueError, environ=None) -> dict:
    """A Slurm partition as allocation mode runs it when IOLAB_IN_ALLOCATION asks for it (else
    unchanged); error: the exception a refused setting raises (systems.config_error)."""
    environ = os.environ if environ is None else environ
    if not wanted(environ) or part.get("scheduler") not in ("slurm", "squeue"):
        return part
    jobid = environ.get("SLURM_JOB_ID", "")
    if not jobid:
        raise error(f"{ENV}=1 runs the cases as steps of the Slurm allocation this runs in, "
                    "and there is none (no SLURM_JOB_ID): run it inside salloc or sbatch "
                    "(iolab submit)")
    out = {k: v for k, v in part.items() if k != "access"}    # the allocation has them already
    out.update(scheduler="local", launcher=LAUNCHER,
               descr=f"{part.get('descr', '')} (steps inside Slurm allocation {jobid})")
    return out


def of(part) -> str | None:
    """The allocation a ReFrame partition runs its cases in, as steps; None: job mode."""
    launcher = getattr(getattr(part, "launcher_type", None), "registered_name", None)
    if launcher != LAUNCHER:
        return None
    return os.environ.get("SLURM_JOB_ID") or None


def provenance(part) -> dict:
    """A record's mode: {"mode": "job"} or {"mode": "allocation", "allocation": its id}."""
    alloc = of(part)
    return {"mode": ALLOCATION, "allocation": alloc} if alloc else {"mode": JOB}


def step(nodes: int) -> tuple[list[str], str, list[str]]:
    """(lines before the step, the shell word of its nodes, srun's options) of a step on the
    allocation's first `nodes` nodes: srun alone may choose any of them, and the record and the
    witnesses must name the ones it ran on."""
    need = int(nodes)
    lines = [
        f'{STEP_NODES}=$(scontrol show hostnames "${{SLURM_JOB_NODELIST:-}}" | head -n {need} '
        "| paste -sd, -)",
        f'[ "$(printf %s "${STEP_NODES}" | tr , "\\n" | grep -c .)" -eq {need} ] || '
        + shell.stop_job(f"the allocation has fewer than the {need} nodes this case needs"),
    ]
    return lines, f'"${STEP_NODES}"', [f"--nodes={need}", f'--nodelist="${STEP_NODES}"']


# --- the clock ---

_LEFT = re.compile(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)")


def seconds_left(text: str) -> int | None:
    """squeue's %L ("1-02:03:04", "02:03:04", "03:04") in seconds; None: no limit (UNLIMITED,
    NOT_SET) or not a time."""
    m = _LEFT.fullmatch(text.strip())
    if not m:
        return None
    days, hours, minutes, secs = (int(g) if g else 0 for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + secs


def time_left(jobid: str) -> tuple[int | None, str | None]:
    """(seconds the allocation has left, None) or (None, why that is not known)."""
    try:
        out = subprocess.run(["squeue", "-h", "-j", str(jobid), "-o", "%L"], capture_output=True,
                             text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"squeue: {exc}"
    if out.returncode != 0:
        return None, f"squeue: {' '.join(out.stderr.split())[:300] or f'exit {out.returncode}'}"
    text = out.stdout.strip()
    return seconds_left(text), None if text else "squeue: the allocation is not in the queue"


def reserve(environ=None) -> int:
    environ = os.environ if environ is None else environ
    text = environ.get(RESERVE_ENV, "").strip()
    return int(text) if text.isdigit() else RESERVE


def minutes(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 90:
        return f"{seconds} s"
    return f"{seconds // 60} min {seconds % 60} s" if seconds < 600 else f"{seconds // 60} min"


def refusal(jobid: str, left: int, limit: float, keep: int, exp_id: str, run_id: str,
            jobs_left: int) -> str:
    """Why the next step is not started, and how to go on, in one line."""
    return (f"allocation {jobid} ends in {minutes(left)}; the next job's time limit "
            f"({minutes(limit)}) and {keep} s for iolab do not fit; {jobs_left} job(s) left: "
            f"iolab resume {exp_id} {run_id} --in-allocation (in a new allocation)")


def check_clock(part, limit: float | None, exp_id: str, run_id: str, jobs_left: int) -> None:
    """Before a step: raise ReFrame's ForceExitError (which ends the session, every job not run
    recorded aborted with the reason) when its time limit does not fit in the allocation."""
    from reframe.core.exceptions import ForceExitError
    from reframe.core.logging import getlogger

    jobid = of(part)
    if jobid is None:
        return
    if not limit:
        getlogger().warning(f"iolab: allocation {jobid}: a case without a time limit is started "
                            "without a check of the time left")
        return
    left, why = time_left(jobid)
    if why:
        getlogger().warning(f"iolab: allocation {jobid}: the step is started without a check "
                            f"of the time left ({why})")
        return
    if left is None:        # an allocation without a time limit
        return
    keep = reserve()
    if limit + keep <= left:
        return
    text = refusal(jobid, left, limit, keep, exp_id, run_id, jobs_left)
    getlogger().warning(f"iolab: {text}")
    exc = ForceExitError(f"iolab: {text}")
    exc.iolab_reason = f"not started: {text}"
    raise exc
