"""Writing a run: results/<id>/<run-id>/{manifest.json, records.jsonl, cases/...}.

Nothing here overwrites: a run directory is created exclusively, records are appended one line
per write, raw outputs go to fresh per-case directories.

Records are durable: a line is appended whole or not at all (partial writes are continued, a
failed append is truncated away), then fsynced. When the results disk is full (or failing), the
records are kept in memory, retried, and finally written to a fallback file (FALLBACK_NAME in the
run directory, else $TMPDIR, else the home directory) named in the error, so nothing measured is
lost. One process appends to a run (run ids are created exclusively per process), and a
ReFrame run's process holds the run's lock (lock.py) until the run ends. The lock also keeps
back space so a run on a full disk can still record its end (RunDir.finish).

Every planned job ends with one record whose status is one of STATUSES.
"""

from __future__ import annotations

import atexit
import errno
import gzip
import json
import os
import shutil
import sys
import time
from pathlib import Path

from . import integrity, lock
from ..errors import IolabError
from .files import oserror_text, write_all
from .lock import LOCK, LOCK_RESERVE_EXTRA
from .manifests import read_manifest
from .provenance import sha256_file
from .record import Record
from .runfiles import MANIFEST, RECORDS, check_experiment_id, check_plain_name

COMPRESS_OVER = 1 << 20
# The records an append could not write, beside the run (or in $TMPDIR, or the home directory).
FALLBACK_NAME = "records.unsaved-{pid}.jsonl"
# Errors worth retrying: the disk may get space back (quota, a cleaner), or the device recover.
RETRYABLE = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO})
RETRY_DELAYS_S = (0.2, 1.0, 3.0)



def _refuse_inside_run(path: Path) -> None:
    """A results root (or experiment directory) inside a run would nest runs in runs."""
    for d in (path, *path.parents):
        if (d / MANIFEST).is_file() and (d / RECORDS).exists():
            raise IolabError(f"{path} is inside the results run {d}; runs are never nested",
                             hint="check IOLAB_RESULTS")


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
            raise IolabError(f"cannot create {root / experiment_id}: {oserror_text(exc)}") from None
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
            raise IolabError(f"cannot create the results run {path}: {oserror_text(exc)}") from None
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
            raise IolabError(f"cannot create the results run {path}: {oserror_text(exc)}") from None
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
        self._save_elsewhere(oserror_text(error))

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
                tried.append(f"{candidate}: {oserror_text(exc)}")
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
            what = oserror_text(exc) if isinstance(exc, OSError) else str(exc)
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
                errors[name] = oserror_text(exc)
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
        self._lock_bytes = lock.take(self.path, reserve, role)
        self._held = True
        atexit.register(self.release)       # however the process ends, short of a kill

    def release(self) -> None:
        """Give up the run's lock (once the run has ended); a no-op unless this process holds it."""
        if not self._held or not lock.give_up(self.path):
            return      # a lock that stays: readers see its process is gone (stale)
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
                                 f"{oserror_text(exc)}") from None

    def _give_back_reserve(self) -> bool:
        """Free the space the lock keeps beyond its first line; whether there was any."""
        held = self.path / LOCK
        try:
            if not self._held or held.stat().st_size <= self._lock_bytes:
                return False
            os.truncate(held, self._lock_bytes)
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
