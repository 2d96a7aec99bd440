"""records.jsonl's lines into records: each line's chain field taken off and checked
(integrity.py), its JSON decoded, and the lines that cannot be read reported and counted.

Readers never fail on a damaged line: a torn last line (a crash mid-write) or a corrupt line is
reported once on stderr, skipped and counted (run.Run.unreadable).
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from . import integrity


@dataclass
class BadLine:
    line: int
    reason: str
    shown: str = field(default="", compare=False)     # the line's start, as the warning shows it


_WARNED: set[tuple[str, int]] = set()


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
