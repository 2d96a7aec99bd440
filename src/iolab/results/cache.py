"""Where iolab keeps what it derived from a run's files, and how an entry is read and written:
the one cache API for every derived value (a manifest parsed, records decoded, a digest, a run's
records.digest parsed, a plan, an experiment loaded, a table's rows, a drift result, a
comparison's statistics).

$IOLAB_CACHE, else $XDG_CACHE_HOME/iolab, else ~/.cache/iolab; never inside results/, so a run
directory holds only what the run wrote. IOLAB_CACHE=off turns it off. An entry is named by
what it holds, the file it was derived from and a key of that file's bytes; it starts with its
head (this format, iolab's code: code_key, and the key of its inputs), is written to a temporary
file and renamed, is readable by its owner only, and is read only when this user owns it and it
is a regular file. Each entry ends with the sha256 of all it holds before (sealed): a value is
used only when its head is the one asked for, that digest is its content's and nothing follows.
Anything else (damaged, edited, foreign, other code, another key) is a miss: the caller derives
the value again from the file, which stays the truth.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import stat
import sys
from pathlib import Path

from ..errors import IolabError

FORMAT = 3        # 2: entries sealed with the sha256 of their content; 3: code_key in the head
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
def code_key() -> str:
    """iolab's code as installed (every module's and schema's path and bytes), the Python and
    pickle versions and this format: every entry's head holds it, so no value derived by other
    code is ever read (about 7 ms, once per process)."""
    import iolab

    base = Path(iolab.__file__).parent
    h = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]} {pickle.HIGHEST_PROTOCOL}\n".encode())
    for root, dirs, files in os.walk(base):
        dirs.sort()
        for name in sorted(files):
            if name.endswith((".py", ".json")):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    data = f.read()
                h.update(f"{os.path.relpath(path, base)} {len(data)}\n".encode() + data)
    return h.hexdigest()[:16]


def key_of(inputs) -> str:
    """A short key of what a value depends on besides the code (JSON-able)."""
    return hashlib.sha256(json.dumps(inputs, default=str).encode()).hexdigest()[:32]


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


def _head(key: str) -> tuple:
    return FORMAT, code_key(), key


def read_value(path: Path, key: str, kind: type):
    """The value of an entry written by write_value for `key`, if it is a `kind` and the entry
    is intact (sealed); else None."""
    got = read_parts(path, key)
    if got is None or len(got[1]) != 0 or type(got[0]) is not kind:
        return None
    return got[0]


def write_value(path: Path, key: str, value, kind_prefix: str) -> None:
    write_parts(path, key, value, [], kind_prefix)


def read_parts(path: Path, key: str) -> tuple | None:
    """(head value, parts) of an entry write_parts wrote for `key`, if it is intact; else None."""
    if not readable(path):
        return None
    try:
        with open(path, "rb") as raw:
            f = Sealed(raw)
            if pickle.load(f) != _head(key):
                return None
            value, count = pickle.load(f)
            parts = [pickle.load(f) for _ in range(count)]
            if not f.intact():      # edited or damaged after it was written: a miss
                return None
    except Exception:  # noqa: BLE001 - a damaged or foreign entry is only a miss
        return None
    return value, parts


def write_parts(path: Path, key: str, value, parts: list, kind_prefix: str) -> None:
    """An entry of `value` and `parts` (each pickled on its own: a pickler remembers every
    object it wrote, so a large list goes in parts) for `key`."""
    def dump(f):
        for x in (_head(key), (value, len(parts)), *parts):
            pickle.dump(x, f, protocol=pickle.HIGHEST_PROTOCOL)
    write(path, kind_prefix, dump)


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
    """compute(), or the value it gave for this `key` of `source` before (with this code)."""
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
    `kept` is run.kept_at(run) (the records and their cache key; None: computed, not kept), and
    the entry's key is that and `inputs` (JSON: what else the value depends on)."""
    if kept is None:
        return compute()
    source, run_key = kept
    return memo(source, kind, key_of([run_key, inputs]), compute, value_type)
