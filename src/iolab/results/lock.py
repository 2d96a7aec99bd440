"""A run's lock: held by the process that writes the run (ReFrame's) from its creation to its
end, and by `iolab resume` or a search's next round while it continues the run. Who holds it is
on its first line; the rest of the file is space kept so a run on a full disk can still record
its end (rundir.RunDir.finish). Resume, search and reproduce refuse a run a live process writes
(check_not_running); a lock whose process is gone is stale.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import socket
from dataclasses import dataclass
from pathlib import Path

from ..errors import IolabError
from .files import MAX_MANIFEST_BYTES, open_regular, oserror_text
from .provenance import utcnow
from .files import write_all

LOCK = "run.lock"
LOCK_RESERVE_EXTRA = 16 << 10   # beyond the manifest's own size: `finished` and the fallbacks


def take(run_path: Path, reserve: int = 0, role: str | None = None) -> int:
    """Create the run's lock for this process (FileExistsError: someone holds it) with `reserve`
    bytes kept after its first line; the size of that line."""
    me = os.getpid()
    held = {"pid": me, "host": socket.gethostname(), "pid_start": _process_start(me),
            "since": utcnow(), **({"role": role} if role else {})}
    text = json.dumps(held, sort_keys=True) + "\n"
    fd = os.open(Path(run_path) / LOCK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    try:
        # the reserve: bytes no file system compresses or leaves sparse
        write_all(fd, text.encode() + os.urandom(reserve))
        os.fsync(fd)
    finally:
        os.close(fd)
    return len(text.encode())


def give_up(run_path: Path) -> bool:
    """Remove the run's lock if this process holds it; False when it had to stay (readers then
    see a lock whose process is gone: stale)."""
    held = read_lock(run_path)
    if held is not None and held.pid == os.getpid():
        try:
            (Path(run_path) / LOCK).unlink()
        except OSError:
            return False
    return True


@dataclass(frozen=True)
class Lock:
    """A run's lock file: the process writing the run. `alive`: True, False (the process is gone:
    a stale lock, e.g. a reframe killed with SIGKILL), or None when this host cannot tell (the
    lock names another host, or cannot be read)."""
    path: Path
    pid: int | None
    host: str | None
    pid_start: str | None = None
    why_unreadable: str | None = None
    role: str | None = None         # None: the run's writer; "resume", "search": a continuation's

    @property
    def who(self) -> str:
        return f"pid {self.pid} on host {self.host}"

    @property
    def doing(self) -> str:
        """What the holder does, e.g. "still running (pid 7 on host n1)"."""
        if self.role:
            return f"being continued by iolab {self.role} ({self.who})"
        return f"still running ({self.who})"

    @property
    def alive(self) -> bool | None:
        if self.why_unreadable or self.host != socket.gethostname():
            return None
        started = _process_start(self.pid)
        return started is not None and (self.pid_start is None or started == self.pid_start)


def read_lock(run_path: Path) -> Lock | None:
    """The run's lock, or None when no process holds it."""
    path = Path(run_path) / LOCK
    if not os.path.lexists(path):
        return None
    try:
        fd = open_regular(path, MAX_MANIFEST_BYTES + LOCK_RESERVE_EXTRA, within=Path(run_path))
        with os.fdopen(fd, "rb") as f:
            held = json.loads(f.readline(1 << 16).decode("utf-8"))
        pid, host = held["pid"], held["host"]
        if type(pid) is not int or pid <= 0 or not isinstance(host, str):
            raise ValueError("no pid and host")
        start, role = held.get("pid_start"), held.get("role")
        return Lock(path, pid, host, start if isinstance(start, str) else None,
                    role=role if isinstance(role, str) else None)
    except (IolabError, OSError, ValueError, KeyError, TypeError) as exc:
        return Lock(path, None, None, why_unreadable=str(exc).splitlines()[0][:200] or "empty")


def _process_start(pid: int | None) -> str | None:
    """When a live process started (its /proc start time, so a reused pid is another process);
    None when there is no such process, or it has exited (a zombie). Without /proc, "?" for a
    live pid."""
    if not isinstance(pid, int) or pid <= 0:
        return None
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return None
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        except OSError:
            pass        # it exists, owned by someone else
        return "?"
    return None if fields[0] in ("Z", "X") else fields[19]


@contextlib.contextmanager
def holding(run_path: Path, role: str):
    """This process holds a run's lock while it continues the run (`iolab resume`, a search's
    next round): a second continuation started meanwhile is refused by name (check_not_running).
    The run's own writer must be gone (check_not_running first)."""
    path = Path(run_path)
    try:
        take(path, role=role)
    except FileExistsError:        # another process took it since the check
        check_not_running([path], take_over=False)
        raise IolabError(f"run {path.name} was locked by another process just now; try again") from None
    except OSError as exc:
        raise IolabError(f"run {path.name}: cannot take its lock: {oserror_text(exc)}") from None

    def release():
        give_up(path)
    atexit.register(release)        # however the process ends, short of a kill
    try:
        yield
    finally:
        release()
        atexit.unregister(release)


def check_not_running(run_paths, *, take_over: bool, say=None) -> None:
    """Refuse to continue, reproduce or search from runs one of which a live process still
    writes; a lock whose process is gone (on this host) is taken over: removed, unless
    `take_over` is False (a dry run), said either way with `say`. A lock of another host, or
    one that cannot be read, is refused with how to take it over."""
    for path in run_paths:
        lock = read_lock(path)
        if lock is None:
            continue
        run_id = Path(path).name
        alive = lock.alive
        if alive:
            raise IolabError(f"run {run_id} is {lock.doing}",
                             hint="wait for it to end: `iolab status` shows how far it is")
        if alive is None:
            what = (f"its lock {lock.path} cannot be read ({lock.why_unreadable})"
                    if lock.why_unreadable else
                    f"run {run_id} is locked by {lock.who}, which this host "
                    f"({socket.gethostname()}) cannot check")
            raise IolabError(what, hint=f"if no process writes run {run_id} any more, delete "
                                        f"{lock.path} and try again")
        if take_over:
            try:
                lock.path.unlink()
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise IolabError(f"run {run_id}: cannot remove its stale lock {lock.path}: "
                                 f"{oserror_text(exc)}") from None
        if say:
            say(f"run {run_id} was left locked by {lock.who}, which is gone (killed?): "
                + ("taken over" if take_over else "it would be taken over"))


