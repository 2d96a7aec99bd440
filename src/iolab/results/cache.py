"""Where iolab keeps what it derived from a run's files, and how an entry is read and written.

$IOLAB_CACHE, else $XDG_CACHE_HOME/iolab, else ~/.cache/iolab; never inside results/, so a run
directory holds only what the run wrote. IOLAB_CACHE=off turns it off. An entry is named by
what it holds, the file it was derived from and a key of that file's bytes; it starts with the
key, is written to a temporary file and renamed, is readable by its owner only, and is read
only when this user owns it and it is a regular file. Each entry ends with the sha256 of all it
holds before (sealed): a value is used only when that digest is its content's and nothing
follows. Anything else (damaged, edited, foreign, another key) is a miss: the caller derives
the value again from the file, which stays the truth.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import stat
from pathlib import Path

from ..errors import IolabError

FORMAT = 2        # 2: entries sealed with the sha256 of their content
MIN_BYTES = 1 << 20        # smaller files: deriving again costs less than hashing and loading


def cache_dir() -> Path | None:
    where = os.environ.get("IOLAB_CACHE")
    if where == "off":
        return None
    if where:
        return _outside_results(Path(where), "IOLAB_CACHE")
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return _outside_results(Path(base) / "iolab", "XDG_CACHE_HOME")


def _outside_results(where: Path, name: str) -> Path:
    """`where`, unless it is inside the results root or a run directory (one holding a manifest
    and records): a run directory holds only what its run wrote."""
    from ..project import project_root
    from .runfiles import MANIFEST, RECORDS, results_root

    real = Path(os.path.realpath(where))
    root = Path(os.path.realpath(results_root(project_root())))
    run = next((d for d in (real, *real.parents)
                if (d / MANIFEST).is_file() and (d / RECORDS).is_file()), None)
    if real == root or root in real.parents or run is not None:
        inside = f"the run directory {run}" if run is not None else f"the results root {root}"
        raise IolabError(f"{name}={where}: the cache would be inside {inside}; point it elsewhere "
                         "(default ~/.cache/iolab) or set IOLAB_CACHE=off")
    return where


@functools.cache
def package_key() -> str:
    """iolab's code as installed (each module's and schema's name, size and mtime): a value
    derived by much of it (a loaded experiment) is cached under this, never read by other code."""
    import iolab

    base = Path(iolab.__file__).parent
    h = hashlib.sha256()
    for root, dirs, files in os.walk(base):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                st = os.stat(os.path.join(root, name))
                h.update(f"{os.path.relpath(os.path.join(root, name), base)} {st.st_size} "
                         f"{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def prefix(kind: str, source: Path) -> str:
    """Entries of one kind for one source file share a prefix: a new one replaces the old."""
    return f"{kind}-" + hashlib.sha256(str(Path(source).resolve()).encode()).hexdigest()[:16] + "-"


def entry(where: Path, kind: str, source: Path, key: str) -> Path:
    return where / f"{prefix(kind, source)}{key}.pickle"


def readable(path: Path) -> bool:
    try:
        st = path.lstat()
    except OSError:
        return False
    return st.st_uid == os.getuid() and stat.S_ISREG(st.st_mode)


class Sealed:
    """A cache entry's file as read or written through it: every byte goes into a sha256, and
    the entry ends with that digest (write: seal(); read: intact() once all is read)."""

    SIZE = 32

    def __init__(self, f):
        self.f, self.h = f, hashlib.sha256()

    def write(self, data) -> int:
        self.h.update(data)
        return self.f.write(data)

    def read(self, n: int = -1) -> bytes:
        data = self.f.read(n)
        self.h.update(data)
        return data

    def readline(self, limit: int = -1) -> bytes:
        data = self.f.readline(limit)
        self.h.update(data)
        return data

    def readinto(self, buf) -> int:
        n = self.f.readinto(buf)
        self.h.update(memoryview(buf)[:n])
        return n

    def seal(self) -> None:
        self.f.write(self.h.digest())

    def intact(self) -> bool:
        """Whether what was read is what was written: the digest follows it, and nothing else."""
        return self.f.read(self.SIZE + 1) == self.h.digest()


def read_value(path: Path, key: str, kind: type):
    """The value of an entry written by write_value for `key`, if it is a `kind` and the entry
    is intact (sealed); else None."""
    if not readable(path):
        return None
    try:
        with open(path, "rb") as raw:
            f = Sealed(raw)
            if pickle.load(f) != (FORMAT, key):
                return None
            value = pickle.load(f)
            if not f.intact():
                return None
    except Exception:  # noqa: BLE001 - a damaged or foreign entry is only a miss
        return None
    return value if type(value) is kind else None


def write_value(path: Path, key: str, value, kind_prefix: str) -> None:
    write(path, kind_prefix, lambda f: (pickle.dump((FORMAT, key), f, protocol=pickle.HIGHEST_PROTOCOL),
                                        pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)))


def write(path: Path, kind_prefix: str, dump) -> None:
    """Atomically and sealed (dump writes through a Sealed), then the source's older entries of
    the kind go; a cache that cannot be written (read-only home, full disk) is skipped."""
    where = path.parent
    tmp = where / f".{path.name}.{os.getpid()}.tmp"
    try:
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as raw:
            f = Sealed(raw)
            dump(f)
            f.seal()
        os.replace(tmp, path)
        for old in where.glob(f"{kind_prefix}*.pickle"):
            if old != path:
                old.unlink(missing_ok=True)
    except (OSError, IolabError, pickle.PicklingError):
        try:
            tmp.unlink(missing_ok=True)
        except OSError:
            pass


def memo(source: Path, kind: str, key: str, compute, value_type: type):
    """compute(), or the value it gave for this `key` of `source` before."""
    where = cache_dir()
    if where is None:
        return compute()
    path = entry(where, kind, source, key)
    value = read_value(path, key, value_type)
    if value is None:
        value = compute()
        write_value(path, key, value, prefix(kind, source))
    return value


def of_run(kept: tuple | None, kind: str, inputs, compute, value_type: type):
    """compute() of a value derived from a run's digest alone, kept beside its cached digest:
    `kept` is Run.kept_at() (the records and their cache key; None: computed, not kept), and
    the entry's key is that, iolab's code and `inputs` (JSON: what else the value depends on)."""
    if kept is None:
        return compute()
    source, run_key = kept
    key = hashlib.sha256(json.dumps([package_key(), run_key, inputs], default=str)
                         .encode()).hexdigest()[:32]
    return memo(source, kind, key, compute, value_type)
