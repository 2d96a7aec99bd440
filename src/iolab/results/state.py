"""Where a run stands: complete, incomplete or unfinished, who holds its lock, how far it is
(`iolab status`, `iolab runs`): `of(run)`.
"""

from __future__ import annotations

import datetime

from .lock import Lock, read_lock
from .run import Run, chain_of, derived


def _clock(seconds: float) -> str:
    seconds = int(max(0, seconds))
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"


def progress_text(done: int, planned: int | None, counts: dict, elapsed: float, eta: bool = True) -> str:
    """'7/12 jobs recorded (1 failed), 0:03:10 elapsed, ETA 0:02:16' (ETA from the pace so far;
    none for a run that will not go on)."""
    bad = ", ".join(f"{counts[s]} {s}" for s in ("failed", "aborted", "skipped") if counts.get(s))
    text = f"{done}/{planned if planned is not None else '?'} jobs recorded" + (f" ({bad})" if bad else "")
    text += f", {_clock(elapsed)} elapsed"
    if eta and planned and 0 < done < planned:
        text += f", ETA {_clock(elapsed / done * (planned - done))}"
    return text



def of(run: Run) -> RunState:
    """Where `run` stands (made once per run; the lock is read each time it is asked)."""
    return derived(run, RunState)


class RunState:
    """Where a run stands (complete, incomplete, unfinished), who writes it, and how far it is:
    from its manifest, what reading it found and its lock."""

    def __init__(self, run: Run):
        self.run = run

    @property
    def origin(self) -> str:
        return "imported" if self.run.manifest.origin == "imported" else "measured"

    @property
    def parent(self) -> str | None:
        """The run this one continues (`iolab resume`), if any."""
        parent = self.run.manifest.get("parent")
        return parent if isinstance(parent, str) else None

    @property
    def finished(self) -> dict | None:
        """How the run ended; for a chain, how its last continuation ended."""
        return chain_of(self.run)[-1].manifest.finished

    @property
    def state(self) -> str:
        """complete | incomplete (ended, with jobs missing or interrupted) | unfinished (no end)."""
        reading = self.run.reading
        if reading.planned is not None and self.finished is None:
            return "unfinished"
        if self.finished is not None and (not self.finished.get("complete") or reading.missing):
            if (self.finished.get("complete_once_merged") is True and not reading.missing
                    and not reading.unsaved):      # its fallback records are merged back
                return "complete"
            return "incomplete"
        if self.finished is None and reading.counts.get("aborted"):
            return "incomplete"
        return "complete"
    @property
    def complete(self) -> bool:
        return self.state == "complete"

    def counts_text(self) -> str:
        counts = self.run.reading.counts
        shown = [f"{n} {s}" for s, n in counts.items() if n or s == "ok"]
        total = sum(counts.values())
        return f"{total} record{'s' * (total != 1)}: " + ", ".join(shown)

    def describe(self) -> str:
        """complete | incomplete: N of M jobs have no record (interrupted by SIGTERM) | unfinished ..."""
        state, reading = self.state, self.run.reading
        missing = (f"{len(reading.missing)} of {reading.planned} jobs have no record"
                   if reading.missing and reading.planned is not None else "")
        if state == "unfinished":
            return self._unfinished() + (f": {missing}" if missing else "")
        if state == "incomplete":
            bits = [missing] if missing else []
            if reading.counts.get("aborted"):
                bits.append(f"{reading.counts['aborted']} aborted")
            reason = (self.finished or {}).get("reason")
            text = "incomplete: " + (", ".join(bits) or "the run says so")
            return text + (f" ({reason})" if reason else "")
        return "complete" if reading.planned is not None else "complete as recorded"

    @property
    def writer(self) -> Lock | None:
        """The lock of the run (for a chain: of its latest run holding one), if any."""
        locks = [lock for r in chain_of(self.run) if (lock := read_lock(r.path)) is not None]
        return locks[-1] if locks else None

    @property
    def writer_gone(self) -> bool:
        """An unfinished run whose writer is known to be dead (it will never finish)."""
        lock = self.writer
        return self.state == "unfinished" and lock is not None and lock.alive is False

    def _unfinished(self) -> str:
        """An unfinished run by its lock: still running, killed, or (no lock) either."""
        lock = self.writer
        if lock is None:
            return "unfinished (killed or still running)"
        alive = lock.alive
        if alive:
            return lock.doing if not lock.role else f"unfinished, {lock.doing}"
        if alive is False:
            return f"unfinished (killed: its writer, {lock.who}, is gone)"
        return (f"unfinished (locked by {lock.who}; this host cannot tell whether it still "
                "runs)" if lock.pid else "unfinished (its lock cannot be read)")

    def progress(self, now: float) -> str:
        """How far the run (or chain) is, for `iolab status`."""
        start = chain_of(self.run)[0].manifest.created_unix or now
        end = now
        ended = (self.finished or {}).get("ended")
        if isinstance(ended, str):
            try:
                end = datetime.datetime.fromisoformat(ended.replace("Z", "+00:00")).timestamp()
            except ValueError:
                pass
        # a run whose writer is dead will not go on: no ETA, and its time ends at its last record
        gone = self.writer_gone
        if gone:
            starts = [t for r in self.run.records if (t := r.started) is not None]
            end = max(starts, default=end)
        reading = self.run.reading
        return progress_text(reading.total, reading.planned, reading.counts, end - start,
                             eta=not gone)
