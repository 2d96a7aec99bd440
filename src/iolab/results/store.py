"""Versioned results: results/<id>/<run-id>/{manifest.json, records.jsonl, cases/...}.

Nothing here overwrites: a run directory is created exclusively, records are appended one line
per write, raw outputs go to fresh per-case directories.

Records are durable: a line is appended whole or not at all (partial writes are continued, a
failed append is truncated away), then fsynced. When the results disk is full (or failing), the
records are kept in memory, retried, and finally written to a fallback file (FALLBACK_NAME in the
run directory, else $TMPDIR, else the home directory) named in the error, so nothing measured is
lost. One process appends to a run (run ids are created exclusively per process), and a
ReFrame run's process holds the run's lock (LOCK) until the run ends: resume, search and
reproduce refuse a run a live process writes (check_not_running). The lock also keeps back space
so a run on a full disk can still record its end (RunDir.finish).

Readers open a run's files only when they are regular files within size limits (open_regular):
a FIFO or a device is refused at once, never waited on.

Readers never fail on a damaged line: a torn last line (a crash mid-write) or a corrupt line is
reported once on stderr, skipped and counted (run.Run.unreadable).

The manifest of a ReFrame run lists what was planned before anything ran (`planned`: one
{part, case_id, repetition} per job) and, once, when the run ends, gains `finished`:
{complete, reason, ended, counts}. A run with `planned` and no `finished` was killed (or is
still running). Every planned job ends with one record whose status is one of STATUSES.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import gzip
import hashlib
import json
import os
import shutil
import socket
import stat
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from . import cache, integrity
from ..errors import IolabError
from .record import SCHEMA, STATUSES, Manifest, Record  # noqa: F401  (STATUSES: the format's)
from .provenance import sha256_file, utcnow
from .runfiles import MANIFEST, RECORDS, results_root  # noqa: F401  (the store's names)
from .runfiles import check_experiment_id, check_plain_name, inside

COMPRESS_OVER = 1 << 20
# The records an append could not write, beside the run (or in $TMPDIR, or the home directory).
FALLBACK_NAME = "records.unsaved-{pid}.jsonl"
# Held by the process that writes a run (ReFrame's) from its creation to its end: who it is, on
# its first line. The rest of the file is space kept for the run's end: on a full disk it is
# given back so the manifest can still gain `finished` (RunDir.finish).
LOCK = "run.lock"
LOCK_RESERVE_EXTRA = 16 << 10   # beyond the manifest's own size: `finished` and the fallbacks
# Errors worth retrying: the disk may get space back (quota, a cleaner), or the device recover.
RETRYABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})
RETRY_DELAYS_S = (0.2, 1.0, 3.0)
# What a reader opens (read_regular): regular files only, and at most this many bytes, so a
# FIFO, a device or a runaway file never blocks a command or fills its memory.
MAX_RECORDS_BYTES = 4 << 30       # records.jsonl: a campaign's is hundreds of MiB
MAX_MANIFEST_BYTES = 256 << 20    # manifest.json: a campaign's plan makes it megabytes
MAX_IMPORT_BYTES = 1 << 30        # one benchmark output given to `iolab import`
MAX_DARSHAN_LOG_BYTES = 4 << 30   # a case's stored Darshan log (DXT traces make them large)


def _refuse_inside_run(path: Path) -> None:
    """A results root (or experiment directory) inside a run would nest runs in runs."""
    for d in (path, *path.parents):
        if (d / MANIFEST).is_file() and (d / RECORDS).exists():
            raise IolabError(f"{path} is inside the results run {d}; runs are never nested",
                             hint="check IOLAB_RESULTS")


def _why(exc: OSError) -> str:
    code = errno.errorcode.get(exc.errno or 0)
    return f"{exc.strerror or exc}" + (f" ({code})" if code else "")


# ------------------------------------------------------------------------------- writing runs

def write_all(fd: int, data: bytes) -> None:
    """os.write may write less than asked (a nearly full disk): continue until all is written."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        if n <= 0:
            raise OSError(errno.EIO, "write returned 0 bytes")
        view = view[n:]


def _append_lines(path: Path, data: bytes, *, nofollow: bool = False) -> None:
    """Append whole lines and fsync them, or leave the file as it was (truncated back).

    A file that does not end in a newline (a line torn by a crash) gets one first, so the torn
    line stays alone and is skipped by readers, and the new lines are intact."""
    flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
    if nofollow:
        flags |= os.O_NOFOLLOW
    fd = os.open(path, flags, 0o644)
    try:
        start = os.fstat(fd).st_size
        if start and os.pread(fd, 1, start - 1) != b"\n":
            data = b"\n" + data
        try:
            write_all(fd, data)
            os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, start)
                os.fsync(fd)
            except OSError:
                pass   # the torn tail stays; readers skip it and the next append starts a new line
            raise
    finally:
        os.close(fd)


class RunDir:
    def __init__(self, path: Path):
        self.path = Path(path)
        self._pending: list[bytes] = []        # records not yet written anywhere
        self._fallback: Path | None = None     # where earlier unwritable records went
        self._fallbacks: list[Path] = []       # every fallback file this run wrote, in order
        self._dir_synced = False
        self._held = False                     # this process holds the run's lock
        self._lock_bytes = 0                   # its first line; the rest is the reserve
        self._chain: tuple[int, str] | None = None     # the last position written, its digest
        self._chained: bool | None = None              # whether this run's lines carry the chain

    @property
    def run_id(self) -> str:
        return self.path.name

    @classmethod
    def create(cls, root: Path, experiment_id: str, run_id: str, manifest: dict,
               hold: bool = False) -> RunDir:
        """<root>/<experiment_id>/<run_id>/, new. Both names must be plain names, and
        <root>/<experiment_id> a real directory (not a symlink), so a run lands nowhere else.
        With `hold`, this process holds the run's lock (LOCK) until `release`: a run being
        written is never resumed or reproduced by another process (see Lock)."""
        check_experiment_id(experiment_id)
        check_plain_name(run_id, "run id")
        root = Path(root)
        _refuse_inside_run(root.resolve())
        try:
            root.mkdir(parents=True, exist_ok=True)
            real_root = root.resolve()
            parent = root / experiment_id
            parent.mkdir(exist_ok=True)
        except OSError as exc:
            raise IolabError(f"cannot create {root / experiment_id}: {_why(exc)}") from None
        if parent.is_symlink() or parent.resolve() != real_root / experiment_id:
            raise IolabError(f"{parent} is a symlink (to {parent.resolve()}); runs are created only "
                             f"in real directories under {real_root}")
        if (parent / MANIFEST).exists():
            raise IolabError(f"{parent} is a results run, not an experiment's directory; runs are "
                             "never nested", hint="check IOLAB_RESULTS")
        path = parent / run_id
        try:
            path.mkdir()
        except FileExistsError:
            raise IolabError(f"results run {path} already exists; runs are never overwritten") from None
        except OSError as exc:
            raise IolabError(f"cannot create the results run {path}: {_why(exc)}") from None
        run = cls(path)
        # where records would go on a full disk, known now: the disk may be full by then
        manifest = {**manifest, "created_unix": time.time(), integrity.MANIFEST_KEY: integrity.FORMAT,
                    "fallback_files": [str(c) for c in run._fallback_candidates()]}
        text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        try:
            if hold:        # before the manifest: a run is never seen without its writer
                run._take_lock(reserve=len(text.encode()) + LOCK_RESERVE_EXTRA)
            _write_new(path / MANIFEST, text)
            os.close(os.open(path / RECORDS, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644))
            _fsync_dir(path)
            _fsync_dir(parent)
        except OSError as exc:
            shutil.rmtree(path, ignore_errors=True)   # nothing recorded yet: leave no half run
            raise IolabError(f"cannot create the results run {path}: {_why(exc)}") from None
        run._dir_synced = True
        run._chained, run._chain = True, (0, integrity.seed(manifest, run_id))
        return run

    def _chain_head(self) -> None:
        """Where this run's chain ends (a RunDir opened on an existing run): the last chained
        line of records.jsonl, else its seed; a run written before the chain stays unchained."""
        manifest = self.manifest()
        end = integrity.file_tail(self.path / RECORDS)
        try:
            empty = (self.path / RECORDS).stat().st_size == 0
        except OSError:
            empty = True
        self._chained = bool(manifest.get(integrity.MANIFEST_KEY)) or end is not None or empty
        self._chain = end or (0, integrity.seed(manifest, self.run_id))

    def _line(self, record: dict) -> bytes:
        """A record as its records.jsonl line, at the next place of the run's chain."""
        record = {k: v for k, v in record.items() if k != integrity.KEY}
        body = json.dumps(record, sort_keys=True, allow_nan=False)
        if self._chained is None:
            self._chain_head()
        if not self._chained:
            return (body + "\n").encode()
        position = self._chain[0] + 1
        line, digest = integrity.seal(body, position, self._chain[1])
        self._chain = (position, digest)
        return (line + "\n").encode()

    def _merged(self) -> bool:
        """Whether records.jsonl ends where the lines now in the fallback file begin (they were
        moved back), so the next line can go there without breaking the chain's order."""
        if not self._chained or not self._pending:
            return True
        _body, sealed = integrity.unseal(self._pending[0].rstrip(b"\n"))
        end = integrity.file_tail(self.path / RECORDS)
        return sealed is not None and (end or (0, ""))[0] == sealed[0] - 1

    def append(self, record: Record | dict) -> None:
        """Append one record, durably (see the module docstring), as the next line of the run's
        chain (integrity.py). Raises IolabError naming the fallback file when the record could
        not go into records.jsonl."""
        if isinstance(record, Record):
            record = record.to_json()
        self._pending.append(self._line(record))
        if self._fallback and not self._merged():
            # Earlier lines wait in the fallback file: this one goes after them, so that moving
            # them back keeps the chain in order.
            self._save_elsewhere("earlier records are in the fallback file, not merged back yet")
        # After a fallback, one try per record: the disk is known to be in trouble.
        delays = (0,) if self._fallback else (0, *RETRY_DELAYS_S)
        error: OSError | None = None
        for delay in delays:
            time.sleep(delay)
            try:
                _append_lines(self.path / RECORDS, b"".join(self._pending))
            except OSError as exc:
                error = exc
                if exc.errno not in RETRYABLE:
                    break
                continue
            self._pending.clear()
            if not self._dir_synced:
                try:    # records.jsonl may have just been created: make its name durable too
                    _fsync_dir(self.path)
                    self._dir_synced = True
                except OSError:
                    pass    # the record is written; the directory is synced with the next one
            return
        self._save_elsewhere(_why(error))

    def _fallback_candidates(self) -> list[Path]:
        name = FALLBACK_NAME.format(pid=os.getpid())
        elsewhere = f"iolab-{self.path.parent.name}-{self.run_id}-{name}"
        out = [self._fallback] if self._fallback else []
        out += [self.path / name, Path(os.environ.get("TMPDIR") or "/tmp") / elsewhere,
                Path.home() / elsewhere]
        return list(dict.fromkeys(out))

    def _save_elsewhere(self, why: str) -> None:
        target = self.path / RECORDS
        n = len(self._pending)
        tried = []
        for candidate in self._fallback_candidates():
            existed = candidate.exists()
            try:
                _append_lines(candidate, b"".join(self._pending), nofollow=True)
            except OSError as exc:
                tried.append(f"{candidate}: {_why(exc)}")
                if not existed:
                    try:
                        if candidate.stat().st_size == 0:
                            candidate.unlink()
                    except OSError:
                        pass
                continue
            self._pending.clear()
            self._fallback = candidate
            if candidate not in self._fallbacks:
                self._fallbacks.append(candidate)
            raise IolabError(
                f"{target}: could not append {n} record(s): {why}. Nothing is lost: they "
                f"are in {candidate}",
                hint=f"once there is space, move them back with `cat {candidate} >> {target} && "
                     f"rm {candidate}`")
        # Nowhere to write: keep them in memory for the next append, and show them as a last resort.
        for line in self._pending:
            sys.stderr.write(f"iolab: unsaved record: {line.decode()}")
        raise IolabError(f"{target}: could not append {n} record(s): {why}; no fallback file "
                         f"could be written either ({'; '.join(tried)}). They are kept in memory, "
                         "retried with the next append, and were printed on stderr")

    def store_raw(self, case_id: str, repetition: int, files: list[Path],
                  compress: set[str] = frozenset()) -> dict:
        """Copy a case's raw outputs into cases/<case_id>/rep<N>/ (a new directory). Files named
        in `compress` are gzipped when larger than COMPRESS_OVER bytes.

        Never raises for a file that cannot be copied (a full disk, an unreadable output): the
        record must still be written, so {"dir", "files": {name: sha256}} gains
        "errors": {name: reason}, and no partial copy is left behind."""
        rel = Path("cases") / str(case_id) / f"rep{repetition}"
        out: dict = {"dir": str(rel), "files": {}}
        errors: dict[str, str] = {}
        dest = self.path / rel
        try:
            check_plain_name(case_id, "case id")
            dest.mkdir(parents=True, exist_ok=False)
        except (IolabError, OSError) as exc:
            what = _why(exc) if isinstance(exc, OSError) else str(exc)
            if isinstance(exc, FileExistsError):
                what = "already exists; raw outputs are never overwritten"
            out["errors"] = {str(rel): what}
            return out
        for src in files:
            name = src.name
            try:
                if not src.is_file():
                    continue
                if name in compress and src.stat().st_size > COMPRESS_OVER:
                    name += ".gz"
                    with open(src, "rb") as fin, gzip.open(dest / name, "wb") as fout:
                        shutil.copyfileobj(fin, fout)
                else:
                    shutil.copyfile(src, dest / name)
                os.chmod(dest / name, 0o444)  # results are never edited in place
                out["files"][name] = sha256_file(dest / name)
            except OSError as exc:
                errors[name] = _why(exc)
                try:
                    (dest / name).unlink(missing_ok=True)
                except OSError:
                    pass
        if errors:
            out["errors"] = errors
        return out

    def manifest(self) -> dict:
        return read_manifest(self.path)

    def _take_lock(self, reserve: int = 0, role: str | None = None) -> None:
        me = os.getpid()
        held = {"pid": me, "host": socket.gethostname(), "pid_start": _process_start(me),
                "since": utcnow(), **({"role": role} if role else {})}
        text = json.dumps(held, sort_keys=True) + "\n"
        fd = os.open(self.path / LOCK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        try:
            # the reserve: bytes no file system compresses or leaves sparse
            write_all(fd, text.encode() + os.urandom(reserve))
            os.fsync(fd)
        finally:
            os.close(fd)
        self._held = True
        self._lock_bytes = len(text.encode())
        atexit.register(self.release)       # however the process ends, short of a kill

    def release(self) -> None:
        """Give up the run's lock (once the run has ended); a no-op unless this process holds it."""
        if not self._held:
            return
        held = read_lock(self.path)
        if held is not None and held.pid == os.getpid():
            try:
                (self.path / LOCK).unlink()
            except OSError:
                return      # it stays; readers see a lock whose process is gone (stale)
        self._held = False
        atexit.unregister(self.release)

    def finish(self, finished: dict) -> None:
        """Once, at the end of the run: the manifest gains `finished` (atomic replace, so a
        reader sees the old manifest or the new one, never half of either), with the fallback
        files this run wrote (`unsaved`). On a full disk the lock's reserve is given back first,
        so a run whose records are safe in a fallback file still ends."""
        manifest = self.manifest()
        if "finished" in manifest:
            raise IolabError(f"run {self.run_id} is already finished; its manifest is not rewritten")
        if self._fallbacks:
            finished = {**finished, "unsaved": [str(p) for p in self._fallbacks]}
        manifest["finished"] = finished
        if self._chained is None:
            self._chain_head()
        if self._chained:       # what the chain must reach: a line removed from its end shows
            manifest["finished"] = {**finished, "records": self._chain[0], "last_digest": self._chain[1]}
        text = json.dumps(manifest, indent=2, sort_keys=True) + "\n"
        tmp = self.path / f".{MANIFEST}.tmp{os.getpid()}"
        for attempt in (1, 2):
            try:
                with open(tmp, "w") as f:
                    f.write(text)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, self.path / MANIFEST)
                _fsync_dir(self.path)
                return
            except OSError as exc:
                tmp.unlink(missing_ok=True)    # the old manifest stays: the run reads as unfinished
                if attempt == 1 and exc.errno in RETRYABLE and self._give_back_reserve():
                    continue
                raise IolabError(f"{self.path / MANIFEST}: could not record the end of the run: "
                                 f"{_why(exc)}") from None

    def _give_back_reserve(self) -> bool:
        """Free the space the lock keeps beyond its first line; whether there was any."""
        lock = self.path / LOCK
        try:
            if not self._held or lock.stat().st_size <= self._lock_bytes:
                return False
            os.truncate(lock, self._lock_bytes)
            return True
        except OSError:
            return False


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_new(path: Path, text: str) -> None:
    """Write a file that must not exist yet, atomically."""
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.link(tmp, path)
    except FileExistsError:
        raise IolabError(f"{path} already exists; results are never overwritten") from None
    finally:
        tmp.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------ the lock

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
    run = RunDir(Path(run_path))
    try:
        run._take_lock(role=role)
    except FileExistsError:        # another process took it since the check
        check_not_running([run.path], take_over=False)
        raise IolabError(f"run {run.run_id} was locked by another process just now; try again") from None
    except OSError as exc:
        raise IolabError(f"run {run.run_id}: cannot take its lock: {_why(exc)}") from None
    try:
        yield
    finally:
        run.release()


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
                                 f"{_why(exc)}") from None
        if say:
            say(f"run {run_id} was left locked by {lock.who}, which is gone (killed?): "
                + ("taken over" if take_over else "it would be taken over"))


# ------------------------------------------------------------------------------- reading runs

def read_manifest(run_path: Path) -> dict:
    path = Path(run_path) / MANIFEST
    return _parse_manifest(path, _manifest_bytes(path))


def _manifest_bytes(path: Path) -> bytes:
    return read_regular(path, MAX_MANIFEST_BYTES, within=path.parent, missing="not a results run")


def _parse_manifest(path: Path, data: bytes) -> dict:
    try:
        manifest = json.loads(data.decode("utf-8"))
    except ValueError as exc:
        raise IolabError(f"unreadable manifest: {exc}", file=str(path)) from None
    if not isinstance(manifest, dict):
        raise IolabError("unreadable manifest: not a JSON object", file=str(path))
    return manifest


# path -> (sha256 of its bytes, the manifest, the file's identity, whether it is whole)
_SHARED_MANIFESTS: dict[Path, tuple[str, dict, tuple | None, bool]] = {}
PLANNED = "planned"


def _identity(path: Path) -> tuple | None:
    """A regular file's inode, size and times (None: not one): unchanged, its bytes are too."""
    try:
        st = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(st.st_mode):
        return None
    return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns


def read_manifest_shared(run_path: Path, whole: bool = True) -> dict:
    """read_manifest for readers: parsed once per process while the file's bytes stay the same
    (a campaign's plan makes a manifest megabytes, and finding a run reads every run's), and
    read again only when its inode, size or times changed. The dict is shared: never change it.

    whole=False: a campaign's manifest may come without its plan (`planned`, most of its bytes,
    which most readers never look at); manifest_whole() says whether it did."""
    path = Path(run_path) / MANIFEST
    ident = _identity(path)
    known = _SHARED_MANIFESTS.get(path)
    if known is not None and ident is not None and known[2] == ident and (known[3] or not whole):
        return known[1]
    data = _manifest_bytes(path)
    sha = hashlib.sha256(data).hexdigest()
    if known is not None and known[0] == sha and (known[3] or not whole):
        manifest, is_whole = known[1], known[3]
    elif len(data) < cache.MIN_BYTES:
        manifest, is_whole = _parse_manifest(path, data), True
    elif whole:                                 # a campaign's plan: parsed once per bytes
        manifest, is_whole = cache.memo(path, "manifest", f"{len(data)}-{sha}",
                                        lambda: _parse_manifest(path, data), dict), True
    else:
        got = cache.memo(path, "manifest-head", f"{len(data)}-{sha}",
                         lambda: _head(_parse_manifest(path, data)), tuple)
        if not (len(got) == 2 and type(got[0]) is dict and type(got[1]) is bool):
            got = _head(_parse_manifest(path, data))       # an entry of another shape: a miss
        manifest, is_whole = got
    # the identity taken before reading: a write during the read shows as a change next time
    _SHARED_MANIFESTS[path] = (sha, manifest, ident, is_whole)
    return manifest


def _head(manifest: dict) -> tuple[dict, bool]:
    """A manifest without its plan, and whether that is all of it (it had none)."""
    return {k: v for k, v in manifest.items() if k != PLANNED}, PLANNED not in manifest


def manifest_whole(run_path: Path) -> bool:
    """Whether the manifest read_manifest_shared last gave of a run was all of it."""
    known = _SHARED_MANIFESTS.get(Path(run_path) / MANIFEST)
    return known is None or known[3]


def manifest_sha(run_path: Path) -> str | None:
    """The sha256 of the manifest bytes read_manifest_shared last read of a run, if any."""
    known = _SHARED_MANIFESTS.get(Path(run_path) / MANIFEST)
    return known[0] if known else None


@dataclass
class BadLine:
    line: int
    reason: str
    shown: str = field(default="", compare=False)     # the line's start, as the warning shows it


_WARNED: set[tuple[str, int]] = set()


def read_records_bytes(path: Path) -> bytes:
    """records.jsonl's bytes (path: the file); a missing or unreadable file is an error."""
    return read_regular(path, MAX_RECORDS_BYTES, within=path.parent, missing="not a results run")


_KINDS = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a directory"))


def open_regular(path: Path, limit: int, *, within: Path | None = None,
                 missing: str = "no such file") -> int:
    """A read-only descriptor on `path`, only if it is a regular file of at most `limit` bytes;
    else IolabError in one line. Opened without blocking (O_NONBLOCK: a FIFO with no writer)
    and checked on the opened descriptor. With `within` (a run directory), a symlink is followed
    only to a file inside it."""
    path = Path(path)
    target = path
    if path.is_symlink():
        try:
            target = path.resolve(strict=True)
        except (OSError, RuntimeError):
            raise IolabError(f"{path}: a symlink to {os.readlink(path)!r}, which does not resolve "
                             "to a file") from None
        if within is not None and not inside(target, Path(within)):
            raise IolabError(f"{path}: a symlink to {target}, outside the run {Path(within).name}; "
                             "a run's files are read only inside its directory")
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(target, flags | os.O_NOFOLLOW)
    except FileNotFoundError:
        raise IolabError(f"{path} not found: {missing}") from None
    except OSError as exc:
        raise IolabError(f"{path}: cannot read: {_why(exc)}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            kind = next((name for test, name in _KINDS if test(st.st_mode)), "not a regular file")
            shown = f" (a symlink to {target})" if target != path else ""
            raise IolabError(f"{path}{shown}: {kind}, not a regular file; iolab reads only "
                             "regular files")
        if st.st_size > limit:
            raise IolabError(f"{path}: {st.st_size} bytes, over iolab's limit of {limit} bytes "
                             "for this file (docs/guarantees.md: Input limits)")
    except BaseException:
        os.close(fd)
        raise
    return fd


def readable_file(path: Path, limit: int) -> None:
    """Refuse (IolabError, one line) what open_regular refuses, reading nothing."""
    os.close(open_regular(path, limit))


def read_regular(path: Path, limit: int, *, within: Path | None = None,
                 missing: str = "no such file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes (open_regular says what else is
    refused); a file that grows past the limit while it is read is refused too."""
    fd = open_regular(path, limit, within=within, missing=missing)
    try:
        with os.fdopen(fd, "rb", buffering=0) as f:
            # to the end into one buffer sized from fstat (grown if the file grows), by as many
            # reads as it takes: Linux returns at most 2 GiB per read, and the chunks of a
            # larger file joined held it twice (6.9 GB to read the 3.4 GB of 1M records)
            data = f.readall()
    except OSError as exc:
        raise IolabError(f"{path}: cannot read: {_why(exc)}") from None
    if len(data) > limit:
        raise IolabError(f"{path}: more than {limit} bytes, over iolab's limit for this file "
                         "(docs/guarantees.md: Input limits)")
    return data


def loads_line(body: bytes):
    """A line's JSON: orjson's decoder (about twice as fast as json's on records: scripts/
    bench-analysis --decoders), and json's for what orjson refuses but json reads (NaN,
    integers beyond 64 bits), so every line reads as json reads it."""
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError:
        return json.loads(body.decode("utf-8"))


def _each_line(data: bytes):
    """The lines of records.jsonl's bytes (a last one only if something follows the last
    newline), one at a time: a campaign's file is never held twice."""
    start, size = 0, len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        yield data[start:end]
        start = end + 1


def decode_records(path: Path, data: bytes, convert=None,
                   scan: integrity.Scan | None = None,
                   kept: list | None = None) -> tuple[list, list[BadLine]]:
    """The records in records.jsonl's bytes, each passed through `convert` (e.g. Record.from_json)
    as it is read, and its unreadable lines (each reported: warn_bad). Each line's chain field is
    taken off; with a `scan` (integrity.Scan) every line is checked as it is read, the records
    it sets aside are left out, and its verdict (scan.verdict) names the damaged lines, which
    are then no longer merely unreadable. `kept` gains the line number of each record returned."""
    torn = not data.endswith(b"\n")    # no newline at the end: the last write did not finish
    last = data.count(b"\n") + (torn and bool(data))     # the number of the last line
    records, bad, at = [], [], []
    for n, raw in enumerate(_each_line(data), 1):
        if not raw.strip():
            if scan is not None:
                scan.blank_line(n)
            continue
        body, sealed = integrity.unseal(raw)
        try:
            rec = loads_line(body)
            if not isinstance(rec, dict) or not isinstance(rec.get("case_id"), str):
                raise ValueError("not a record (a JSON object with a case_id)")
        except ValueError as exc:
            if torn and n == last:
                reason = "torn last line (a write was interrupted)"
            else:
                reason = f"corrupt record ({str(exc).splitlines()[0][:80]})"
            if scan is not None and sealed is not None:      # whole, but not what was written
                scan.record(n, {}, sealed)
                continue
            if scan is not None:
                scan.bad_line(n, reason)
            bad.append(BadLine(n, reason, raw[:60].decode("utf-8", "replace")))
            continue
        if scan is not None and not scan.record(n, rec, sealed):
            continue
        records.append(rec if convert is None else convert(rec))
        at.append(n)
    if scan is not None:
        verdict = scan.finish()
        aside = {p.line for p in verdict.problems if p.set_aside}
        if aside:       # set aside once the whole chain was seen (duplicates, order)
            records = [r for r, n in zip(records, at) if n not in aside]
        named = {p.line for p in verdict.problems}
        bad = [b for b in bad if b.line not in named]
    if kept is not None:
        aside = {p.line for p in scan.verdict.problems if p.set_aside} if scan is not None else ()
        kept += [n for n in at if n not in aside]
    warn_bad(path, bad)
    return records, bad


def warn_bad(path: Path, bad: list[BadLine]) -> None:
    """Report unreadable lines on stderr, once per process and line."""
    for b in bad:
        if (str(path), b.line) not in _WARNED:
            _WARNED.add((str(path), b.line))
            print(f"iolab: warning: {path}:{b.line}: {b.reason}, skipped: {b.shown!r}", file=sys.stderr)
