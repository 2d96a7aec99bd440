"""A run's records, decoded once: a cache of the typed records keyed by records.jsonl's bytes.

records.jsonl stays the truth. Each read hashes the file's bytes (size and sha256) and takes the
records from the cache only when an entry for exactly those bytes exists, was written by this
iolab's code (cache.code_key), and loads whole; anything else decodes the JSON lines as before
(decoding.decode_records) and writes a new entry. Unreadable lines are kept
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

A run also keeps that fold itself, beside its records (records.digest: write_run_digest, when
it ends and as it grows): the first read of a run, on any machine and with an empty cache, takes
it from there once it is checked to be of exactly these records and manifest (read_run_digest),
and says why when it is not.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import orjson

from . import cache, integrity
from . import digest as digest_module
from .digest import Digest, fold
from ..errors import IolabError
from ..parsers import Metric
from .record import Observed, Provenance, Record
from .decoding import BadLine, decode_records, loads_line, warn_bad
from .files import MAX_MANIFEST_BYTES, MAX_RECORDS_BYTES, open_regular, read_records_bytes, read_regular
from .runfiles import DIGEST, MANIFEST, RECORDS


CACHE_MIN_BYTES = cache.MIN_BYTES
CHUNK = 5000           # records per pickle in an entry
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
             manifest_key: str = "", whole=None) -> Loaded:
    """A run's records that pass the checks (integrity.py) and their digest. With digest_only,
    the digest the run wrote (records.digest, checked: read_run_digest) or a cache entry's is
    read and no record is decoded; its records are decoded when first asked for (`later`), from
    their own entry for the same bytes. The checks depend on the manifest too: `manifest_key`
    (its sha256) is part of an entry's key. `whole`: when `manifest` came without its plan, what
    reads the manifest with it, for the checks of records decoded."""
    path = Path(run_path) / RECORDS
    where = cache.cache_dir()
    check = (whole or manifest, Path(run_path).name)
    if digest_only and manifest_key and (Path(run_path) / DIGEST).exists():
        size, sha = file_sha(path)
        got = read_run_digest(Path(run_path), size, sha, manifest_key, manifest)
        if got is not None:
            facts, bad, verdict = got
            warn_bad(path, bad)
            key = _entry_key(size, sha, manifest_key)
            if where is None or size < CACHE_MIN_BYTES:
                def later():
                    data = read_records_bytes(path)
                    if (len(data), hashlib.sha256(data).hexdigest()) != (size, sha):
                        raise _changed(path)
                    return _decode(path, data, check)[0]
                return Loaded(None, facts, bad, later, None, verdict)
            entry = cache.entry(where, "records", path, key)
            return Loaded(None, facts, bad, lambda: _records_of(path, entry, key, check, manifest_key)[0],
                          key, verdict)
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


def _entry_key(size: int, sha: str, suffix: str = "") -> str:
    return f"{size}-{sha}" + (f"-{suffix[:16]}" if suffix else "")     # code: in the head


def _key(path: Path, data: bytes | None = None, suffix: str = "") -> str | None:
    """What an entry is for: the file's size and sha256 (file_sha), the code's, and `suffix`
    (the manifest's); None for a file under CACHE_MIN_BYTES."""
    if data is not None:
        size, sha = len(data), hashlib.sha256(data).hexdigest()
    else:
        size, sha = file_sha(path, at_least=CACHE_MIN_BYTES)
    if size < CACHE_MIN_BYTES:
        return None
    return _entry_key(size, sha, suffix)


# A file whose last change is at least this old is hashed once per version (below).
SETTLED_NS = 2_000_000_000


def file_sha(path: Path, at_least: int = 0) -> tuple[int, str]:
    """records.jsonl's size and sha256 (streamed: a campaign's file is hundreds of megabytes);
    the sha256 is "" for a file under `at_least` bytes (not hashed). The sha256 of a file that
    has not changed for SETTLED_NS is kept in the cache under its stat signature (device, inode,
    size, modification and change times, as git's index does): any write, a copy or a rename
    over it gives another signature and the file is hashed again; a file changed in the last
    SETTLED_NS is always hashed (a second change within the clock's step would look the same)."""
    # never a FIFO or device (it would block), nor a file over the limit
    fd = open_regular(path, MAX_RECORDS_BYTES, within=path.parent, missing="not a results run")
    try:
        with os.fdopen(fd, "rb", buffering=0) as f:
            st = os.fstat(f.fileno())
            if st.st_size < at_least:
                return st.st_size, ""
            where = cache.cache_dir()
            settled = time.time_ns() - max(st.st_mtime_ns, st.st_ctime_ns) >= SETTLED_NS
            signature = (f"{st.st_dev}-{st.st_ino}-{st.st_size}-{st.st_mtime_ns}-{st.st_ctime_ns}"
                         if settled and where is not None else None)
            if signature is not None:
                entry = cache.entry(where, "sha256", path, signature)
                known = cache.read_value(entry, signature, str)
                if known is not None:
                    return st.st_size, known
            h, size = hashlib.sha256(), 0
            buf = bytearray(1 << 20)
            view = memoryview(buf)
            while n := f.readinto(buf):
                h.update(view[:n])
                size += n
    except OSError:
        read_records_bytes(path)        # says what is wrong, as a read does
        raise
    sha = h.hexdigest()
    if signature is not None and size == st.st_size:
        cache.write_value(entry, signature, sha, cache.prefix("sha256", path))
    return size, sha


def _changed(path: Path) -> IolabError:
    return IolabError(f"{path} changed while it was being read (a run still writing it?)",
                      hint="run the command again")


# ------------------------------------------------------------------ the digest a run keeps
# <run>/records.digest: a header line, then the body. The header says what the digest is of:
# records.jsonl's size, sha256 and where its chain ends, the manifest's sha256, and the body's
# own size and sha256; the body holds the records folded by case (digest.to_json), the checks'
# verdict and the unreadable lines. JSON only: the file travels with the run.
DIGEST_FORMAT = 1
MAX_DIGEST_BYTES = 1 << 30
# A run being written rewrites its digest when its records have doubled since the last one
# (from CHECKPOINT_FROM on): each rewrite reads the records again, so all of them together read
# a campaign's records about twice, and a reader finds at most half of them undigested.
CHECKPOINT_FROM = 1000


def write_run_digest(run_path: Path) -> Path:
    """Write <run>/records.digest for the run's records and manifest as they are now: decoded
    and checked exactly as a reader would, then written whole (a temporary file, fsynced, renamed
    over the old one) or not at all."""
    run_path = Path(run_path)
    path = run_path / RECORDS
    manifest_bytes = read_regular(run_path / MANIFEST, MAX_MANIFEST_BYTES, within=run_path,
                                  missing="not a results run")
    manifest = json.loads(manifest_bytes)
    data = read_records_bytes(path)
    # checked first, then folded as decoded again: a campaign's records are never all in memory
    scan, kept = integrity.Scan(manifest, run_path.name), []
    _none, bad = decode_records(path, data, _nothing, scan, kept)
    del _none
    verdict = scan.verdict
    facts = fold(Record.from_json(loads_line(integrity.unseal(line)[0]))
                 for line in _lines(data, kept))
    facts.summarize()
    body = json.dumps({"digest": digest_module.to_json(facts),
                       "verdict": {"state": verdict.state, "count": verdict.count, "last": verdict.last,
                                   "problems": [[p.line, p.reason, p.set_aside, p.unmerged]
                                                for p in verdict.problems]},
                       "bad": [[b.line, b.reason, b.shown] for b in bad]},
                      separators=(",", ":")).encode()
    header = {"iolab_digest": DIGEST_FORMAT, "fold": digest_module.FORMAT,
              "records": {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest(),
                          "chain": integrity.tail_position(data)},
              "manifest_sha256": hashlib.sha256(manifest_bytes).hexdigest(),
              "run_id": run_path.name,        # the checks name the run by its directory
              "body": {"bytes": len(body), "sha256": hashlib.sha256(body).hexdigest()}}
    target = run_path / DIGEST
    tmp = run_path / f".{DIGEST}.tmp{os.getpid()}"
    try:
        with open(tmp, "wb") as f:
            f.write(json.dumps(header, sort_keys=True).encode() + b"\n" + body)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, target)
        fd = os.open(run_path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _lines(data: bytes, numbers: list[int]):
    """The lines of `data` with these (increasing) numbers, from 1, without splitting it all."""
    start, at = 0, 1
    for n in numbers:
        while at < n:
            start = data.index(b"\n", start) + 1
            at += 1
        end = data.find(b"\n", start)
        yield data[start:end if end >= 0 else len(data)]


def _nothing(_rec):
    return None


def grow_run_digest(run_path: Path, records: int, written: int) -> bool:
    """Rewrite the digest of a run being written when its `records` have doubled since the last
    digest (of `written` records), from CHECKPOINT_FROM records on; whether it did."""
    if records < max(CHECKPOINT_FROM, 2 * written):
        return False
    write_run_digest(run_path)
    return True


def read_run_digest(run_path: Path, size: int, sha: str, manifest_sha: str,
                    manifest: dict | None = None):
    """(digest, unreadable lines, verdict) from <run>/records.digest when it is exactly of
    these records (`size`, `sha`: records.jsonl's; its chain's end too) and this manifest, and
    whole; else None, having said on stderr why it was not used (nothing when the run is still
    being written and its records grew since: expected)."""
    target = run_path / DIGEST
    why = None
    try:
        data = read_regular(target, MAX_DIGEST_BYTES, within=run_path)
        head, _, body = data.partition(b"\n")
        header = json.loads(head)
        records = header["records"]
        if header.get("iolab_digest") != DIGEST_FORMAT or header.get("fold") != digest_module.FORMAT:
            why = (f"written by another version of iolab (digest format {header.get('iolab_digest')!r}"
                   f" fold {header.get('fold')!r}; this one reads {DIGEST_FORMAT} and "
                   f"{digest_module.FORMAT})")
        elif header["run_id"] != run_path.name:
            why = (f"it was written for run {header['run_id']!r}, not {run_path.name!r} (a copy of "
                   "another run's?)")
        elif header["manifest_sha256"] != manifest_sha:
            why = f"{MANIFEST} changed since it was written"
        elif records["bytes"] != size:
            if size > records["bytes"] and not (manifest or {}).get("finished"):
                return None         # a run still appending: its digest lags behind its records
            end = integrity.file_tail(run_path / RECORDS)
            why = (f"it is of {records['bytes']} bytes of {RECORDS} (chain position "
                   f"{_position(records['chain'])}), the file has {size} (chain position "
                   f"{_position(end)}): records were appended or removed since")
        elif list(integrity.file_tail(run_path / RECORDS) or ()) != list(records["chain"] or ()):
            why = f"{RECORDS}'s chain does not end where the digest's does: edited since"
        elif records["sha256"] != sha:
            why = f"{RECORDS} changed since it was written (same size, another sha256: edited?)"
        elif (len(body), body_sha := hashlib.sha256(body).hexdigest()) != (header["body"]["bytes"],
                                                                            header["body"]["sha256"]):
            why = "damaged: its content does not match its own sha256 (torn or edited)"
        else:
            return _parsed(target, body, body_sha, size)
    except IolabError as exc:
        why = str(exc).splitlines()[0]
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        why = f"unreadable ({type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''})"
    print(f"iolab: note: {target}: not used: {why}; read from {RECORDS} instead (`iolab verify "
          f"{run_path.parent.name} {run_path.name} --write-digest` writes it anew once the records "
          "verify)", file=sys.stderr)
    return None


def _parsed(target: Path, body: bytes, body_sha: str, size: int):
    """(digest, unreadable lines, verdict) of a records.digest body checked against its own
    sha256: parsed, or kept in the cache under that sha256 for a run of at least CACHE_MIN_BYTES
    of records (100k records: parsing 0.2 s, loading the kept parse 0.08 s)."""
    def parse():
        got = orjson.loads(body)
        facts = digest_module.from_json(got["digest"])
        v = got["verdict"]
        verdict = integrity.Verdict(v["state"], v["count"], v["last"],
                                    [integrity.Problem(*p) for p in v["problems"]])
        return facts, [BadLine(*b) for b in got["bad"]], verdict

    where = cache.cache_dir()
    if where is None or size < CACHE_MIN_BYTES:
        return parse()
    key = f"{DIGEST_FORMAT}-{digest_module.FORMAT}-{len(body)}-{body_sha}"
    entry = cache.entry(where, "run-digest", target, key)
    got = _read_digest(entry, key)
    if got is None:
        got = parse()
        cache.write_value(entry, key, got, cache.prefix("run-digest", target))
    return got


def _position(end) -> str:
    return str(end[0]) if end else "none"


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
        raise _changed(path)
    records, bad, verdict = _decoded(path, data, check)
    _write(entry, key, records, bad, verdict, cache.prefix("records", path))
    return records, bad, verdict


def _decoded(path: Path, data: bytes, check: tuple):
    if _SHAREABLE:      # equal records with each string once, made as the lines are read
        share = _Shared().record
        return _decode(path, data, check, lambda d: share(Record.from_json(d)))
    return _decode(path, data, check)


def _decode(path: Path, data: bytes, check: tuple, convert=Record.from_json):
    """Records, unreadable lines and the checks' verdict (check: the manifest, or what reads
    it, and the run id)."""
    manifest, run_id = check
    scan = integrity.Scan(manifest() if callable(manifest) else manifest, run_id)
    records, bad = decode_records(path, data, convert, scan)
    return records, bad, scan.verdict


def _read(entry: Path, key: str):
    got = cache.read_parts(entry, key)
    if got is None or not (type(got[0]) is tuple and len(got[0]) == 2):
        return None
    (bad, verdict), chunks = got
    records = [r for chunk in chunks for r in chunk]
    if not all(type(r) is Record for r in records[:1]):
        return None
    return records, bad, verdict


def _read_digest(entry: Path, key: str):
    got = cache.read_value(entry, key, tuple)
    return got if got is not None and len(got) == 3 and type(got[0]) is Digest else None


def _write(entry: Path, key: str, records, bad, verdict, prefix: str) -> None:
    chunks = [records[start:start + CHUNK] for start in range(0, len(records), CHUNK)]
    cache.write_parts(entry, key, (bad, verdict), chunks, prefix)


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
