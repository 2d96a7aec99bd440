"""A competing user for a test Slurm: keeps `depth` jobs of its own pending, each holding every
node for `seconds`, so that a job submitted now waits behind them, as on a busy production
queue. It submits and cancels only its own jobs (by id).

    with Backlog(env, nodes=4, depth=1, seconds=8) as backlog:
        ...                                   # submit what is measured
    backlog.submitted                         # the ids it submitted

Slurm starts jobs of equal priority in submit order, so each job submitted while the backlog
runs waits for the `depth` backlog jobs queued before it: in job mode at every job, in
allocation mode once.
"""

from __future__ import annotations

import subprocess
import threading
import time

NAME = "iolab-backlog"


class Backlog:
    def __init__(self, env: dict, nodes: int, depth: int = 1, seconds: int = 8,
                 poll: float = 0.3):
        self.env, self.nodes, self.depth, self.seconds, self.poll = env, nodes, depth, seconds, poll
        self.submitted: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._keep_queued, daemon=True)
        self.error: str | None = None

    def _slurm(self, *argv: str) -> str:
        done = subprocess.run(list(argv), capture_output=True, text=True, env=self.env, timeout=30)
        if done.returncode:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr.strip()}")
        return done.stdout

    def pending(self) -> int:
        # the pending jobs, then ours among them: squeue -j refuses (exit 1) once one of the ids
        # has left slurmctld's memory (MinJobAge)
        queued = self._slurm("squeue", "-h", "-t", "PENDING", "-o", "%i").split()
        return len(set(queued) & set(self.submitted))

    def submit(self) -> None:
        out = self._slurm("sbatch", "--parsable", "-J", NAME, "-N", str(self.nodes), "--exclusive",
                          "-t", "1", "-o", "/dev/null", "--wrap", f"sleep {int(self.seconds)}")
        self.submitted.append(out.strip().split(";")[0])

    def _keep_queued(self) -> None:
        try:
            while not self._stop.is_set():
                for _ in range(self.depth - self.pending()):
                    self.submit()
                self._stop.wait(self.poll)
        except Exception as exc:              # said by __exit__, never lost in the thread
            self.error = str(exc)

    def __enter__(self) -> Backlog:
        self.submit()                 # one running before the measured jobs, then `depth` queued
        deadline = time.monotonic() + 30
        while self._slurm("squeue", "-h", "-j", self.submitted[0], "-o", "%T").strip() != "RUNNING":
            if time.monotonic() > deadline:
                raise RuntimeError(f"backlog job {self.submitted[0]} did not start in 30 s")
            time.sleep(0.2)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        if self.submitted:
            subprocess.run(["scancel", *self.submitted], env=self.env, capture_output=True, timeout=30)
        if self.error and exc[0] is None:
            raise RuntimeError(f"the backlog failed: {self.error}")


def waits(env: dict, job_ids: list[str]) -> dict[str, float]:
    """Seconds each job waited in the queue (from its submission to its start), as Slurm
    accounted them (sacct, to the second); a job not started is left out."""
    out = subprocess.run(["sacct", "-n", "-X", "-P", "-j", ",".join(job_ids), "-o",
                          "JobID,Submit,Start"], capture_output=True, text=True, env=env, timeout=30)
    if out.returncode:
        raise RuntimeError(f"sacct: {out.stderr.strip()}")
    found = {}
    for line in out.stdout.split():
        job, submit, start = line.split("|")
        if not {"Unknown", "None"} & {submit, start}:
            found[job] = _epoch(start) - _epoch(submit)
    return found


def _epoch(text: str) -> float:
    return time.mktime(time.strptime(text, "%Y-%m-%dT%H:%M:%S"))
