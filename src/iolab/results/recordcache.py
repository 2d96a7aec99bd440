"""A run's records, decoded once: a cache of the typed records keyed by records.jsonl's bytes.

records.jsonl stays the truth. Each read hashes the file's bytes (size and sha256) and takes the
records from the cache only when an entry for exactly those bytes exists, was written by this
version of the record model (record.py, parsers), and loads whole; anything else decodes the
JSON lines as before (results.decode_records) and writes a new entry. Unreadable lines are kept
in the entry and reported on every read exactly as a decode reports them.

Where and how entries are kept: cache.py (never inside results/; one entry per run path and
kind, a new one replacing the older; owner-only; IOLAB_CACHE=off turns it off). Files under
CACHE_MIN_BYTES are decoded directly: for a small run hashing and loading cost more than they
save.

An entry is a pickle of the Record objects with their repeated strings (parameter names, metric
names and units, provenance values) shared, which loads several times faster than decoding the
JSON and building the records again. Beside it, for the same bytes, a second entry holds the
records' fold by case (digest.py): a verb that needs only that (a table, a comparison) reads it
and decodes no record; the records are read from their entry when first asked for.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from .. import parsers
from .. import stats
from . import cache, integrity
from . import digest as digest_module
from . import record as record_module
from .digest import Digest, fold
from ..errors import IolabError
from ..parsers import Metric
from .record import Observed, Provenance, Record
from .store import (MAX_RECORDS_BYTES, RECORDS, BadLine, decode_records, open_regular,
                    read_records_bytes, warn_bad)

FORMAT = cache.FORMAT
CACHE_MIN_BYTES = cache.MIN_BYTES
CHUNK = 5000           # records per pickle in an entry
_SOURCES = (Path(record_module.__file__), Path(parsers.__file__),
            Path(digest_module.__file__), Path(stats.__file__), Path(integrity.__file__),
            Path(__file__))   # and this format


def _code_key() -> str:
    """What the cached objects depend on: the record model's source and the pickle format."""
    h = hashlib.sha256(f"{FORMAT} {sys.version_info[:2]} {pickle.HIGHEST_PROTOCOL}".encode())
    for src in _SOURCES:
        h.update(src.read_bytes())
    return h.hexdigest()[:16]


@dataclass
class Loaded:
    """A run's records, or (from the cache) only their fold by case with a way to the records."""
    records: list[Record] | None
    digest: Digest | None
    bad: list[BadLine]
    later: Callable[[], list[Record]] | None = None
    key: str | None = None          # of the bytes the digest is of, when it is cached
    verdict: integrity.Verdict | None = None    # what the checks found (set-aside records left out)


def load(run_path: Path, manifest: dict | None = None) -> tuple[list[Record], list[BadLine]]:
    """The typed records of a run and its unreadable lines (reported on stderr as always)."""
    got = open_run(run_path, digest_only=False, manifest=manifest)
    return got.records, got.bad


def open_run(run_path: Path, digest_only: bool = True, manifest: dict | None = None,
             manifest_key: str = "") -> Loaded:
    """A run's records that pass the checks (integrity.py) and their digest. From a cache entry
    only the digest is read (with digest_only); its records are decoded when first asked for
    (`later`), from their own entry for the same bytes. The checks depend on the manifest too:
    `manifest_key` (its sha256) is part of an entry's key."""
    path = Path(run_path) / RECORDS
    where = cache.cache_dir()
    check = (manifest, Path(run_path).name)
    key = _key(path, suffix=manifest_key) if where is not None else None
    if key is None:         # a small file, or no cache: decode it as it is
        records, bad, verdict = _decode(path, read_records_bytes(path), check)
        return Loaded(records, None, bad, verdict=verdict)
    entry = cache.entry(where, "records", path, key)
    digest_entry = cache.entry(where, "digest", path, key)
    if digest_only and (cached := _read_digest(digest_entry, key)) is not None:
        facts, bad, verdict = cached
        warn_bad(path, bad)
        def later():
            return _records_of(path, entry, key, check, manifest_key)[0]
        return Loaded(None, facts, bad, later, key, verdict)
    cached = _read(entry, key)
    if cached is not None:
        records, bad, verdict = cached
        warn_bad(path, bad)
    else:       # decode the bytes as they are now (a run may still be appending to them)
        data = read_records_bytes(path)
        key = _key(path, data, manifest_key)
        if key is None:
            records, bad, verdict = _decode(path, data, check)
            return Loaded(records, None, bad, verdict=verdict)
        entry = cache.entry(where, "records", path, key)
        digest_entry = cache.entry(where, "digest", path, key)
        records, bad, verdict = _decoded(path, data, check)
        _write(entry, key, records, bad, verdict, cache.prefix("records", path))
    if not digest_only:
        return Loaded(records, None, bad, verdict=verdict)
    facts = fold(records)
    facts.summarize()           # once, for every later table of these bytes
    cache.write_value(digest_entry, key, (facts, bad, verdict), cache.prefix("digest", path))
    return Loaded(records, facts, bad, key=key, verdict=verdict)


def _key(path: Path, data: bytes | None = None, suffix: str = "") -> str | None:
    """What an entry is for: the file's size and sha256 (streamed: a campaign's file is hundreds
    of megabytes), the code's, and `suffix` (the manifest's); None for a file under
    CACHE_MIN_BYTES."""
    h, size = hashlib.sha256(), 0
    if data is not None:
        h.update(data)
        size = len(data)
    else:
        # never a FIFO or device (it would block), nor a file over the limit
        fd = open_regular(path, MAX_RECORDS_BYTES, within=path.parent, missing="not a results run")
        try:
            with os.fdopen(fd, "rb", buffering=0) as f:
                if os.fstat(f.fileno()).st_size < CACHE_MIN_BYTES:
                    return None
                buf = bytearray(1 << 20)
                view = memoryview(buf)
                while n := f.readinto(buf):
                    h.update(view[:n])
                    size += n
        except OSError:
            read_records_bytes(path)        # says what is wrong, as a read does
            raise
    if size < CACHE_MIN_BYTES:
        return None
    return f"{size}-{h.hexdigest()}-{_code_key()}" + (f"-{suffix[:16]}" if suffix else "")


def _records_of(path: Path, entry: Path, key: str, check: tuple, manifest_key: str):
    """The records (and unreadable lines) of exactly the bytes `key` names (a digest read from
    the cache): from their entry, else decoded (and the entry written); bytes that changed
    since are an error, never a mix of two versions."""
    cached = _read(entry, key)
    if cached is not None:
        warn_bad(path, cached[1])
        return cached
    data = read_records_bytes(path)
    if _key(path, data, manifest_key) != key:
        raise IolabError(f"{path} changed while it was being read (a run still writing it?)",
                         hint="run the command again")
    records, bad, verdict = _decoded(path, data, check)
    _write(entry, key, records, bad, verdict, cache.prefix("records", path))
    return records, bad, verdict


def _decoded(path: Path, data: bytes, check: tuple):
    if _SHAREABLE:      # equal records with each string once, made as the lines are read
        share = _Shared().record
        return _decode(path, data, check, lambda d: share(Record.from_json(d)))
    return _decode(path, data, check)


def _decode(path: Path, data: bytes, check: tuple, convert=Record.from_json):
    """Records, unreadable lines and the checks' verdict (check: the manifest and run id)."""
    scan = integrity.Scan(*check)
    records, bad = decode_records(path, data, convert, scan)
    return records, bad, scan.verdict


def _read(entry: Path, key: str):
    if not cache.readable(entry):
        return None
    try:
        with open(entry, "rb") as f:
            if pickle.load(f) != (FORMAT, key):
                return None
            chunks, bad, verdict = pickle.load(f)
            records = []
            for _ in range(chunks):
                records += pickle.load(f)
    except Exception:  # noqa: BLE001 - a damaged or foreign entry is only a cache miss
        return None
    if not isinstance(records, list) or not all(type(r) is Record for r in records[:1]):
        return None
    return records, bad, verdict


def _read_digest(entry: Path, key: str):
    got = cache.read_value(entry, key, tuple)
    return got if got is not None and len(got) == 3 and type(got[0]) is Digest else None


def _write(entry: Path, key: str, records, bad, verdict, prefix: str) -> None:
    def dump(f):
        pickle.dump((FORMAT, key), f, protocol=pickle.HIGHEST_PROTOCOL)
        # in chunks: a pickler remembers every object it wrote (memory), per dump
        starts = range(0, len(records), CHUNK)
        pickle.dump((len(starts), bad, verdict), f, protocol=pickle.HIGHEST_PROTOCOL)
        for start in starts:
            pickle.dump(records[start:start + CHUNK], f, protocol=pickle.HIGHEST_PROTOCOL)
    cache.write(entry, prefix, dump)


# The fields _Shared.record copies; a model with other fields is cached as decoded.
_SHAREABLE = (tuple(f.name for f in fields(Record)) == (
    "experiment", "case_id", "benchmark", "status", "part", "repetition", "params", "varied",
    "metrics", "error", "observed", "flags", "provenance", "run_id", "experiment_sha256", "profile",
    "raw", "recorded", "schema", "extra")
    and tuple(f.name for f in fields(Observed)) == (
        "parts", "benchmark", "replayed", "extra")
    and tuple(f.name for f in fields(Provenance)) == ("origin", "system", "extra")
    and tuple(f.name for f in fields(Metric)) == ("name", "value", "unit", "source"))


_NESTED = (dict, list)


class _Shared:
    """Copies of records whose equal strings are one object, so the pickle stores each once
    (and a loaded run keeps each once in memory)."""

    def __init__(self):
        self.strings: dict[str, str] = {}
        share = self.strings.setdefault

        # A call per container, not per string or number (a record holds hundreds of them)
        def value(x):
            t = type(x)
            if t is str:
                return share(x, x)
            if t is dict:
                return {(share(k, k) if type(k) is str else value(k)):
                        (share(v, v) if type(v) is str else v if type(v) not in _NESTED else value(v))
                        for k, v in x.items()}
            if t is list:
                return [share(v, v) if type(v) is str else v if type(v) not in _NESTED else value(v)
                        for v in x]
            return x
        self.value = value

    def record(self, rec: Record) -> Record:
        v = self.value
        obs, prov = rec.observed, rec.provenance
        return Record(
            experiment=v(rec.experiment), case_id=v(rec.case_id), benchmark=v(rec.benchmark),
            status=v(rec.status), part=v(rec.part), repetition=rec.repetition, params=v(rec.params),
            varied=v(rec.varied),
            metrics=[Metric(v(m.name), m.value, v(m.unit), v(m.source)) for m in rec.metrics],
            error=v(rec.error),
            observed=Observed(v(obs.parts), v(obs.benchmark), v(obs.replayed), v(obs.extra)),
            flags=v(rec.flags), provenance=Provenance(v(prov.origin), v(prov.system), v(prov.extra)),
            run_id=v(rec.run_id), experiment_sha256=v(rec.experiment_sha256), profile=v(rec.profile),
            raw=v(rec.raw), recorded=v(rec.recorded), schema=rec.schema, extra=v(rec.extra))
