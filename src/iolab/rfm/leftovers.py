"""Jobs a session left running when it ended before them, found before the next session measures.

A session killed with SIGKILL leaves its Slurm jobs queued or running (and a local job's processes
running in its stage directory): the next session on the system (a resume, a new run) would
measure beside them. So each session notes each job it submits in a file beside its measurement
lock (measuring.py): the stage directory before submission, the job id once the scheduler gave
it, and that the job ended once ReFrame saw it end. The next session to take the lock asks the
scheduler about each job noted but not ended, and waits for those still there (or cancels them),
before its first job.

Why this list: records name the jobs of finished cases only, and Slurm's job names are test names,
which every run of an experiment shares. A job noted by its stage directory alone (its session
was killed between sbatch and the note) is found by its working directory, which ReFrame sets to
the stage directory.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from ..errors import IolabError

QUEUED_BY_SLURM = ("slurm", "squeue")
POLL = 2.0          # seconds between looks at the queue
CANCEL_ENV = "IOLAB_CANCEL_STALE"


@dataclass
class Leftover:
    job: str            # the scheduler's job id (a local job: the process ids)
    state: str          # the scheduler's word (RUNNING, PENDING, COMPLETING), or "running"
    scheduler: str
    note: dict          # what the session noted: experiment, run, case, rep, pid, stage

    def describe(self) -> str:
        n = self.note
        what = (f"{n.get('experiment', '?')} run {n.get('run', '?')} case {n.get('case', '?')} "
                f"rep {n.get('rep', '?')}")
        kind = "Slurm job" if self.scheduler in QUEUED_BY_SLURM else "local job, processes"
        return f"{kind} {self.job} ({self.state}; {what})"


def read_notes(path: Path) -> list[dict]:
    """The jobs noted in `path` and not seen to end, one dict per stage directory."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise IolabError(f"{path}: cannot read the jobs the last session noted: {exc.strerror}") from None
    jobs: dict[str, dict] = {}
    for line in text.splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue        # a line cut short by a kill: its job has another line, or none
        if isinstance(entry, dict) and isinstance(entry.get("stage"), str):
            jobs.setdefault(entry["stage"], {}).update(entry)
    return [j for j in jobs.values() if not j.get("ended")]


def find(notes: list[dict]) -> list[Leftover]:
    """The noted jobs that are still queued or running, as their scheduler says."""
    slurm = [n for n in notes if n.get("scheduler") in QUEUED_BY_SLURM]
    local = [n for n in notes if n.get("scheduler") == "local"]
    other = [n for n in notes if n not in slurm and n not in local]
    if other:
        names = sorted({str(n.get("scheduler")) for n in other})
        raise IolabError(
            f"jobs of scheduler {', '.join(names)} that a session left unfinished cannot be looked "
            f"up by iolab (it asks squeue, or the local processes): "
            f"{', '.join(str(n.get('jobid') or n['stage']) for n in other)}")
    found = _slurm(slurm) if slurm else []
    for n in local:
        pids = running_in(n["stage"])
        if pids:
            found.append(Leftover(",".join(map(str, pids)), "running", "local", n))
    return found


def _slurm(notes: list[dict]) -> list[Leftover]:
    if shutil.which("squeue") is None:
        raise IolabError("cannot tell whether the Slurm jobs a session left unfinished still run: "
                         "squeue is not on PATH")
    cmd = ["squeue", "-h", "-u", getpass.getuser(), "-o", "%i|%T|%Z"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError) as exc:
        raise IolabError(f"cannot tell whether the Slurm jobs a session left unfinished still run: "
                         f"{' '.join(cmd)}: {exc}") from None
    if out.returncode != 0:
        raise IolabError(f"cannot tell whether the Slurm jobs a session left unfinished still run: "
                         f"{' '.join(cmd)}: {' '.join(out.stderr.split())[:300] or out.returncode}")
    by_id = {str(n["jobid"]): n for n in notes if n.get("jobid")}
    by_dir = {os.path.realpath(n["stage"]): n for n in notes if not n.get("jobid")}
    found = []
    for line in out.stdout.splitlines():
        jobid, _, rest = line.strip().partition("|")
        state, _, workdir = rest.partition("|")
        note = by_id.get(jobid) or by_dir.get(os.path.realpath(workdir) if workdir else "")
        if note is not None:
            found.append(Leftover(jobid, state, note["scheduler"], note))
    return found


def cancel(leftovers: list[Leftover]) -> None:
    """scancel the Slurm jobs, SIGKILL the local ones' processes (they are waited for after)."""
    ids = [j.job for j in leftovers if j.scheduler in QUEUED_BY_SLURM]
    if ids:
        out = subprocess.run(["scancel", *ids], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise IolabError(f"scancel {' '.join(ids)}: {' '.join(out.stderr.split())[:300]}")
    for j in leftovers:
        if j.scheduler == "local":
            for pid in j.job.split(","):
                try:
                    os.kill(int(pid), signal.SIGKILL)
                except ProcessLookupError:
                    pass


def settle(path: Path, system: str, limit: float | None, say, remind: float) -> None:
    """Wait until no job noted in `path` (by a session that ended before its jobs did) is queued
    or running, cancelling them first with IOLAB_CANCEL_STALE=1; refuse once `limit` seconds
    have passed (0: at once). Then the notes are cleared for this session's own."""
    notes = read_notes(path)
    start, told, cancelled = time.monotonic(), None, False
    want_cancel = os.environ.get(CANCEL_ENV) == "1"
    while notes:
        left = find(notes)
        if not left:
            break
        names = "; ".join(j.describe() for j in left)
        pids = sorted({str(j.note.get("pid")) for j in left})
        why = (f"{len(left)} job(s) that a session which ended before them (pid {', '.join(pids)}) "
               f"left on {system} still run: {names}")
        if want_cancel and not cancelled:
            say(f"iolab: {why}: cancelling them ({CANCEL_ENV}=1), then waiting for them to leave")
            cancel(left)
            cancelled, told = True, time.monotonic()
        waited = time.monotonic() - start
        if limit is not None and waited >= limit:
            raise IolabError(f"{why}: not started, so that no measurement overlaps them "
                             f"(waited {waited:.0f} s)",
                             hint="wait for them to end, cancel them (`iolab resume --cancel-stale`, "
                                  f"or {CANCEL_ENV}=1), or set IOLAB_MEASURE_WAIT=SECONDS to wait")
        if told is None or time.monotonic() - told >= remind:
            say(f"iolab: {why}: waiting for them to end, so that no measurement overlaps them "
                f"(`iolab resume --cancel-stale` or {CANCEL_ENV}=1 cancels them; "
                "IOLAB_MEASURE_WAIT=0 refuses instead)")
            told = time.monotonic()
        time.sleep(POLL)
    try:
        path.write_text("")
    except OSError as exc:
        raise IolabError(f"{path}: cannot start this session's list of jobs: {exc.strerror}") from None


def running_in(workdir: str) -> list[int]:
    """The processes (but this one) whose working directory is workdir or below it."""
    root = os.path.realpath(workdir)
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cwd = os.readlink(proc / "cwd")
        except OSError:
            continue
        if cwd == root or cwd.startswith(root + os.sep):
            found.append(int(proc.name))
    return found
