"""Record integrity: a digest chain through records.jsonl, and the checks every reader makes.

Each line RunDir.append writes ends with `"chain": [N, PREV, DIGEST]`: its position N in the
run's chain (1, 2, ...), the digest of position N-1 (for N = 1, the run's seed: a sha256 of the
experiment id, the run id and the experiment's sha256 as the manifest gives them) and
DIGEST = sha256(PREV, N, the line without its chain field). So a line checks alone (an edit of
any byte of it no longer matches its digest), and its place is checked against the others: a
line inserted (no chain, or one of another run), duplicated, moved or removed from the middle is
named by its line number. When the run ends, the manifest's `finished.records` keeps the count
and the last digest, so a line removed from the end is found too (an unfinished run cannot say
that of its end). Lines that went to a fallback file on a full disk carry their places, so once
moved back (`cat FILE >> records.jsonl`) they verify.

This is a check against damage and mistakes, not a signature: the digests are keyless, and
whoever rewrites the whole chain (or the manifest with it) makes a file that verifies.

Independently of the chain, every reader sets aside a record that cannot be a measurement of
this run: another experiment's or run's, a second record of one (part, case, repetition), a job
the run's plan does not have, a status, repetition, params or metrics of the wrong type, and a
metric value that is not a finite number >= 0 (bandwidths, rates, times and sizes are never
negative). Runs written before the chain existed have no digests: they are "unverified", and the
other checks still apply to them.

The checks are made in the pass that decodes the records (results.decode_records) and cached
with them (recordcache.py), so a warm read does not hash the lines again.
"""

from __future__ import annotations

import hashlib
import math
import re
from dataclasses import dataclass, field

from .record import STATUSES

FORMAT = 1
KEY = "chain"
MANIFEST_KEY = "records_chain"      # in a manifest: its run's lines carry the chain (FORMAT)
# the line's very end (a byte after it is an edit too)
_TAIL = re.compile(rb', "chain": \[([1-9][0-9]{0,11}), "([0-9a-f]{64})", "([0-9a-f]{64})"\]\}\Z')
_TAIL_LOOK = 200                    # the tail is at most this long


def seed(manifest: dict, run_id: str) -> str:
    """The digest before a run's first line: its experiment id, run id and experiment sha256."""
    text = f"iolab records chain {FORMAT}\n{manifest.get('experiment')}\n{run_id}\n" \
           f"{manifest.get('experiment_sha256') or ''}"
    return hashlib.sha256(text.encode()).hexdigest()


def _digest(prev: bytes, position: int, body: bytes) -> str:
    h = hashlib.sha256(b"%s %d " % (prev, position))
    h.update(body)
    return h.hexdigest()


def seal(body: str, position: int, prev: str) -> tuple[str, str]:
    """A record's JSON object text as a records.jsonl line (no newline) at `position` after
    `prev`, and its digest."""
    raw = body.encode()
    digest = _digest(prev.encode(), position, raw)
    inner = body[:-1].rstrip()
    sep = ", " if inner.rstrip() != "{" else ""
    return f'{inner}{sep}"{KEY}": [{position}, "{prev}", "{digest}"]}}', digest


def unseal(raw: bytes) -> tuple[bytes, tuple | None]:
    """A line's JSON without its chain field, and (position, prev, digest, checks) or None."""
    start = max(0, len(raw) - _TAIL_LOOK)
    m = _TAIL.search(raw, start)
    if m is None:
        return raw, None
    head = raw[:m.start()]
    body = head + b"}" if head.rstrip() != b"{" else b"{}"
    position = int(m.group(1))
    prev, digest = m.group(2), m.group(3).decode()
    return body, (position, prev.decode(), digest, _digest(prev, position, body) == digest)


def file_tail(path) -> tuple[int, str] | None:
    """tail_position of a records.jsonl file, from its last MiB (a line is a few KiB)."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, 2)
            start = max(0, size - (1 << 20))
            f.seek(start)
            data = f.read()
    except OSError:
        return None
    if start:
        data = data[data.find(b"\n") + 1:]        # from the first whole line
    return tail_position(data)


def tail_position(data: bytes) -> tuple[int, str] | None:
    """(position, digest) of the last whole chained line of records.jsonl's bytes (its end)."""
    end = data.rfind(b"\n")
    while end > 0:
        start = data.rfind(b"\n", 0, end) + 1
        _body, sealed = unseal(data[start:end])
        if sealed is not None:
            return sealed[0], sealed[2]
        if data[start:end].strip():
            return None         # a line without a chain: the run is not chained (an old run)
        end = start - 1
    return None


# ------------------------------------------------------------------------------------ checks

@dataclass
class Problem:
    line: int | None        # in records.jsonl; None: the run as a whole
    reason: str
    set_aside: bool = True  # the line's record is left out of tables
    unmerged: bool = False  # lines missing from the end: a fallback file may still hold them

    def where(self, path) -> str:
        return f"{path}:{self.line}" if self.line else f"{path}"


@dataclass
class Verdict:
    """What the checks found in a run's records: `verified` (every line chained and checked),
    `unverified` (written before the chain), and the problems, in line order."""
    state: str
    count: int = 0                      # chained lines
    last: str | None = None             # the digest of the last position
    problems: list[Problem] = field(default_factory=list)

    @property
    def set_aside(self) -> list[Problem]:
        return [p for p in self.problems if p.set_aside]

    def describe(self) -> str:
        """'verified: 8 line(s) in the chain, final digest ...' | 'unverified: ...' | 'failed: ...'."""
        if self.problems:
            return (f"failed: {len(self.problems)} problem(s), {len(self.set_aside)} record line(s) "
                    f"set aside (chain of {self.count} line(s)" + (
                        f", last digest {self.last})" if self.last else ")"))
        if self.state == "unverified":
            return "unverified: written before records carried a digest chain"
        return (f"verified: {self.count} line(s) in the chain, final digest {self.last}" if self.count
                else "verified: no record line yet")


def _number_problem(name: str, value) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f"metric {name!r} value {value!r} is not a number"
    if not math.isfinite(value):
        return f"metric {name!r} value {value!r} is not finite"
    if value < 0:
        return f"metric {name!r} value {value!r} is negative (bandwidths, rates and times never are)"
    return None


_MAX = 1.7976931348623157e308     # the largest finite float: 0 <= v <= _MAX is finite and >= 0


def record_problem(rec: dict) -> str | None:
    """Why a decoded record cannot be a measurement, by its own fields; None when it can."""
    if _plainly_whole(rec):
        return None
    return _record_problem(rec)


def _plainly_whole(rec: dict) -> bool:
    """The common case, quickly (a campaign's 100,000 records): every field of the right type."""
    get = rec.get
    rep, metrics = get("repetition"), get("metrics", ())
    if not (get("status") in STATUSES and type(rep) is int and rep >= 1
            and type(get("params", _EMPTY)) is dict and type(metrics) is list
            and type(get("experiment", "")) is str and type(get("run_id", "")) is str
            and type(get("benchmark", "")) is str and type(get("part") or "") is str
            and type(get("observed") or _EMPTY) is dict and type(get("provenance") or _EMPTY) is dict
            and type(get("raw") or _EMPTY) is dict and type(get("varied") or ()) in (list, tuple)):
        return False
    for m in metrics:
        if type(m) is not dict:
            return False
        value = m.get("value")
        if not ((type(value) is float or type(value) is int) and 0 <= value <= _MAX
                and type(m.get("name")) is str):
            return False
    return True


_EMPTY: dict = {}


def _record_problem(rec: dict) -> str | None:
    status = rec.get("status")
    if status not in STATUSES:
        return f"status {status!r} is not one of {', '.join(STATUSES)}"
    rep = rec.get("repetition")
    if isinstance(rep, bool) or not isinstance(rep, int) or rep < 1:
        return f"repetition {rep!r} is not a whole number from 1"
    for name, kind, what in (("params", dict, "an object"), ("metrics", list, "a list"),
                             ("varied", list, "a list"), ("observed", dict, "an object"),
                             ("provenance", dict, "an object"), ("raw", dict, "an object")):
        if name in rec and not isinstance(rec[name], kind) and not (rec[name] is None and name != "params"):
            return f"{name} is {type(rec[name]).__name__} {_short(rec[name])}, not {what}"
    for name in ("experiment", "run_id", "benchmark"):
        if not isinstance(rec.get(name, ""), str):
            return f"{name} {_short(rec[name])} is not a string"
    part = rec.get("part")
    if part is not None and not isinstance(part, str):
        return f"part {_short(part)} is not a string"
    for m in rec.get("metrics") or ():
        if not isinstance(m, dict) or not isinstance(m.get("name"), str):
            return f"metric {_short(m)} is not an object with a name"
        why = _number_problem(m["name"], m.get("value"))
        if why:
            return why
    return None


def _short(value) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Scan:
    """The checks of one records.jsonl, fed line by line as results.decode_records reads it."""

    def __init__(self, manifest: dict | None, run_id: str):
        self.manifest = manifest or {}
        self.known = manifest is not None       # without it, only what the lines say alone
        self.run_id = run_id
        self.problems: list[Problem] = []
        self.sealed: list[tuple] = []           # (line, position, prev, digest, checks)
        self.plain: list[int] = []              # readable lines without a chain
        self.unreadable: dict[int, str] = {}    # line -> why it could not be read
        self.blank: list[int] = []
        self.jobs: dict[tuple, tuple] = {}      # (part, case_id, repetition) -> (line, digest)
        self.verdict: Verdict | None = None     # once finished
        planned = self.manifest.get("planned")
        self.planned = None
        if isinstance(planned, list):       # a run's plan and records name its cases alike
            self.planned = {(j.get("part") or "main", str(j.get("case_id")), j.get("repetition"))
                            for j in planned if isinstance(j, dict)}
            self.plan_cases = {(part, case) for part, case, _rep in self.planned}
        self.experiment = self.manifest.get("experiment")

    def bad_line(self, line: int, reason: str) -> None:
        self.unreadable[line] = reason

    def blank_line(self, line: int) -> None:
        self.blank.append(line)

    def record(self, line: int, rec: dict, sealed: tuple | None) -> bool:
        """Whether the record of `line` may be used (else it is set aside, with a problem)."""
        if sealed is None and KEY in rec:       # a chain, but not as written: edited
            return self._aside(line, "edited since it was written: its chain field is damaged or "
                                     "not at the end of the line")
        if sealed is None:
            self.plain.append(line)
        else:
            self.sealed.append((line, *sealed))
            if not sealed[3]:
                return self._aside(line, "edited since it was written: its content does not match "
                                         "its chain digest")
        why = record_problem(rec)
        if why:
            return self._aside(line, why)
        exp, run_id = rec.get("experiment"), rec.get("run_id")
        if self.experiment and exp != self.experiment:
            return self._aside(line, f"a record of another experiment ({exp!r}, run {run_id!r}), "
                                     f"not of {self.experiment!r}")
        if run_id and run_id != self.run_id and self.known:
            return self._aside(line, f"a record of another run ({run_id!r}), not of {self.run_id!r}")
        job = (rec.get("part") or "main", rec["case_id"], rec["repetition"])
        if job in self.jobs:
            first, digest = self.jobs[job]
            if sealed is not None and sealed[2] == digest:
                return self._aside(line, f"a copy of line {first} (chain position {sealed[0]}): "
                                         "duplicated")
            return self._aside(line, f"a second record of case {job[1]} repetition {job[2]}"
                                     + (f" (part {job[0]})" if job[0] != "main" else "")
                                     + f": line {first} has it")
        if self.planned is not None and job not in self.planned:
            what = (f"repetition {job[2]} of case {job[1]}" if job[:2] in self.plan_cases
                    else f"case {job[1]}" + (f" of part {job[0]}" if job[0] != "main" else ""))
            return self._aside(line, f"{what} is not in the run's plan (manifest `planned`)")
        self.jobs[job] = (line, sealed and sealed[2])
        return True

    def _aside(self, line: int, reason: str) -> bool:
        self.problems.append(Problem(line, reason))
        return False

    def _place(self, s: tuple, where: dict, seen: dict, top: int):
        """Why a line (its own digest checked) is not in its place: a reason (it is set aside),
        a Problem (positions before it are missing), or None."""
        line, pos, prev, digest, _ok = s
        if pos in seen:
            first = seen[pos]
            return (f"a copy of line {first[0]} (chain position {pos}): duplicated" if digest == first[3]
                    else f"claims chain position {pos}, which line {first[0]} holds: not written by "
                         "this run")
        before = (seed(self.manifest, self.run_id) if self.known else prev) if pos == 1 else (
            where[pos - 1][3] if pos - 1 in where else None)
        if before is not None and prev != before:
            return ("its chain starts from another run's seed: a record of another run, or the "
                    "manifest changed" if pos == 1 else
                    f"does not follow chain position {pos - 1} (line {where[pos - 1][0]}): not "
                    "written by this run there")
        if pos <= top:
            return (f"out of order: chain position {pos} comes after position {top} "
                    f"(line {seen[top][0]}): lines were reordered")
        # positions between the last one placed and this: later in the file (that line is out
        # of order, and named there), or gone
        gone = [g for g in range(top + 1, pos) if g not in where]
        if not gone:
            return None
        after = seen[top][0] if top else 0
        torn = [n for n in self.unreadable if after < n < line]
        if torn:        # an unreadable line where they belong: damaged, not torn by a crash
            return Problem(torn[0], f"unreadable ({self.unreadable[torn[0]]}) where "
                                    f"{_positions(gone)} belongs: damaged", False)
        return Problem(line, f"{_positions(gone)} before this line {'is' if len(gone) == 1 else 'are'} "
                             "missing: removed, or damaged beyond reading", False)

    def finish(self) -> Verdict:
        """The chain's own problems, then the verdict (problems in line order)."""
        chained = bool(self.sealed)
        if chained:
            named = {p.line for p in self.problems}
            for line in self.plain:
                if line not in named:       # the first reason found is the one given
                    self._aside(line, "has no chain digest: not written by this run (inserted?)")
            for line in self.blank:
                self.problems.append(Problem(line, "an empty line, which iolab never writes: the "
                                                   "file was edited", False))
            count, last = self._chain()
        else:
            count, last = 0, None
            if self.manifest.get(MANIFEST_KEY) and (self.plain or self._finished_count()):
                self.problems.append(Problem(None, "no line carries a chain digest, though the run "
                                             "wrote them: records.jsonl was rewritten", False))
        self.problems.sort(key=lambda p: (p.line or 0))
        chained = chained or bool(self.manifest.get(MANIFEST_KEY))
        self.verdict = Verdict("verified" if chained else "unverified", count, last, self.problems)
        return self.verdict

    def _finished_count(self):
        done = (self.manifest.get("finished") or {})
        return done.get("records") if isinstance(done, dict) else None

    def _chain(self) -> tuple[int, str | None]:
        aside = {p.line: p for p in self.problems}
        good = [s for s in self.sealed if s[4]]
        where: dict[int, tuple] = {}        # position -> its line (an edited one is there too)
        for s in good + [s for s in self.sealed if not s[4]]:
            where.setdefault(s[1], s)
        seen: dict[int, tuple] = {}
        top = 0
        for s in good:
            line, pos = s[0], s[1]
            why = self._place(s, where, seen, top)
            if why is None:
                seen[pos], top = s, pos
                continue
            if isinstance(why, Problem):        # the line itself stays: what is before it is gone
                self.problems.append(why)
                seen[pos], top = s, pos
            elif line not in aside:             # the first reason found is the one given
                self._aside(line, why)
        last = seen[top][3] if top else None
        done = self._finished_count()
        ended = (self.manifest.get("finished") or {}).get("last_digest") if done else None
        if isinstance(done, int) and done > top:
            after = f" (line {seen[top][0]})" if top else ""
            self.problems.append(Problem(None, f"ends at chain position {top}{after}, but the run "
                                         f"finished with {done} record line(s): the last "
                                         f"{done - top} were removed (or are in a fallback file not "
                                         "merged back)", False, unmerged=True))
        elif isinstance(done, int) and done in seen and ended and seen[done][3] != ended:
            self.problems.append(Problem(seen[done][0], "is not the line the run finished with "
                                         "(manifest finished.last_digest)", False))
        if isinstance(done, int):
            for pos in range(done + 1, top + 1):
                if pos in seen and seen[pos][0] not in aside:
                    self._aside(seen[pos][0], f"chain position {pos} was appended after the run "
                                              f"finished with {done}")
        return top, last


def _positions(gone: list[int]) -> str:
    if len(gone) == 1:
        return f"chain position {gone[0]}"
    return f"chain positions {gone[0]}-{gone[-1]}" if gone[-1] - gone[0] == len(gone) - 1 else \
        "chain positions " + ", ".join(map(str, gone))
