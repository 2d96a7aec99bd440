"""One measuring process per system at a time, across processes.

ReFrame's `max_jobs: 1` keeps the jobs of one ReFrame process apart; two processes (two
`scripts/run` started together, a resume beside a run) ran their jobs at the same time on the
same nodes, and every record said nothing of it. A session that runs iolab cases first takes an
exclusive lock per system it measures on (this machine for the schedulers that run jobs here);
another session waits for it, saying who holds it, and never measures beside it.

IOLAB_MEASURE_WAIT: seconds to wait for the lock (default: as long as it takes; 0 refuses at
once). IOLAB_LOCK_DIR: where the locks are (default: a directory of this user's under /tmp).

Beside each lock, the jobs its holder submitted (leftovers.py): the next holder waits for those a
killed session left running before it measures.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import socket
import tempfile
import time
from pathlib import Path

from ..errors import IolabError
from . import leftovers

LOCAL_SCHEDULERS = ("local",)
POLL = 1.0          # seconds between tries while waiting
REMIND = 60.0       # seconds between the waiting lines

_HELD: set[str] = set()     # the keys this process holds


def jobs_file(key: str) -> Path:
    return lock_dir() / f"{key}.jobs"


def note_job(key: str, entry: dict) -> None:
    """A line about one of this session's jobs (keyed by its stage directory) beside the lock:
    before submission, with its job id after, and once it ended."""
    if key not in _HELD:
        return      # a dry run, or a test outside a session
    with open(jobs_file(key), "a") as f:
        f.write(json.dumps(entry) + "\n")
        f.flush()


def lock_dir() -> Path:
    where = os.environ.get("IOLAB_LOCK_DIR")
    return Path(where) if where else Path(tempfile.gettempdir()) / f"iolab-locks-{os.getuid()}"


def key_of(scheduler: str, system: str) -> str:
    """What one lock guards: this machine, for jobs that run here; else the system."""
    if scheduler in LOCAL_SCHEDULERS:
        return f"host-{socket.gethostname()}"
    return "system-" + re.sub(r"[^A-Za-z0-9_.-]", "_", system.split(":")[0])


def _holder(f) -> str:
    try:
        f.seek(0)
        data = json.loads(f.read() or "{}")
    except (OSError, ValueError):
        data = {}
    if not isinstance(data, dict) or not data.get("pid"):
        return "another iolab run"
    what = ", ".join(data.get("experiments") or []) or "an experiment"
    return f"iolab (pid {data['pid']} on {data.get('host', '?')}, {what}, since {data.get('since', '?')})"


def _wait_limit() -> float | None:
    text = os.environ.get("IOLAB_MEASURE_WAIT", "").strip()
    if not text:
        return None
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < float("inf"):
        raise IolabError(f"IOLAB_MEASURE_WAIT={text!r}: give seconds to wait (0 refuses at once)")
    return value


@contextlib.contextmanager
def measuring(keys, experiments, say):
    """Hold the measurement lock of each key (sorted: two sessions never wait on each other)
    while the body runs; `say(line)` tells the user what is waited for."""
    limit = _wait_limit()
    where = lock_dir()
    where.mkdir(mode=0o700, parents=True, exist_ok=True)
    held, mine = [], []
    try:
        for key in sorted(set(keys)):
            f = open(where / f"{key}.lock", "a+")
            held.append(f)
            start = time.monotonic()
            told = None
            while True:
                try:
                    fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    waited = time.monotonic() - start
                    if limit is not None and waited >= limit:
                        raise IolabError(
                            f"{_holder(f)} measures on {key.split('-', 1)[1]}: not started, so that "
                            f"no measurement overlaps another (waited {waited:.0f} s)",
                            hint="run it when that one has ended, or set IOLAB_MEASURE_WAIT=SECONDS "
                                 "to wait") from None
                    if told is None or time.monotonic() - told >= REMIND:
                        say(f"iolab: {_holder(f)} measures on {key.split('-', 1)[1]}: waiting for "
                            "it to end, so that no measurement overlaps another "
                            "(IOLAB_MEASURE_WAIT=0 refuses instead)")
                        told = time.monotonic()
                    time.sleep(POLL)
            f.seek(0)
            f.truncate()
            f.write(json.dumps({"pid": os.getpid(), "host": socket.gethostname(),
                                "experiments": sorted(experiments),
                                "since": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}))
            f.flush()
            # the jobs of a session that ended before them, while nobody else can submit here
            leftovers.settle(jobs_file(key), key.split("-", 1)[1], limit, say, REMIND)
            _HELD.add(key)
            mine.append(key)
        yield
    finally:
        _HELD.difference_update(mine)
        for f in held:
            f.close()           # closing releases the lock
