"""A run's records folded once per case: what tables, comparisons and pages read of them.

Tables group repetitions by case. At campaign scale (100,000 records) building a record object
per line and walking them all was most of a table's time, so the walk is done once, here, into
one `CaseFacts` per (part, case): its parameters, repetitions by status with their reasons, the
notes of what was not applied, the MPI-IO values seen in effect, each metric's values with
their repetitions and start times (drift.py tests them over time), and the benchmark versions.
The fold is a function of the records alone, so the record cache (recordcache.py) keeps it
beside them, and a table of a large run is made without decoding a record; anything else a verb
needs still comes from the records.
"""

from __future__ import annotations

from base64 import b64encode
from binascii import a2b_base64
import math
from array import array
from collections.abc import Iterable
from dataclasses import dataclass, field

from .. import stats
from ..layers.registry import findings_folds, owner
from . import evidence as evidence_fold
from .record import STATUSES, Record
from ..units import KEY, shown

# A benchmark's own maximum of a metric (over its iterations) is reported as <metric>_max.
OWN_MAX_SUFFIX = "_max"
BINARY_KEYS = ("name", "version", "path", "sha256")


def shows_effective(key: str) -> bool:
    """Whether the layer that owns a parameter reports the value the system used for it."""
    layer = owner(key)
    return bool(layer and layer.reports_effective(key))


@dataclass
class CaseFacts:
    part: str
    case_id: str
    benchmark: str
    params: dict                    # the case's first record's
    ok: int = 0
    failed: list[str] = field(default_factory=list)     # the reason of each failed repetition
    skipped: list[str] = field(default_factory=list)
    aborted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)      # requested vs applied, each once
    # a varied key whose layer reports its value in effect (mpiio.*) -> the values in effect
    # over its ok repetitions, each once
    effective: dict[str, list] = field(default_factory=dict)
    # metric -> its values over the ok repetitions (doubles: a record's values are floats), and
    # their repetitions; metric -> the benchmark's own maxima (<metric>_max)
    values: dict[str, array] = field(default_factory=dict)
    reps: dict[str, list] = field(default_factory=dict)
    own_max: dict[str, array] = field(default_factory=dict)
    versions: frozenset = frozenset()       # benchmark versions its ok records name
    summaries: dict[str, bytes] | None = None     # of values, packed once computed (summarize)
    # each ok record's start (Record.started; nan: not recorded), in file order; metric -> the
    # positions in it of its values, for a metric that some ok record lacks (else 0, 1, ...)
    started: array = field(default_factory=lambda: array("d"))
    where: dict[str, list] = field(default_factory=dict)
    # what its layers and benchmark measured that may explain its result, per ok repetition:
    # name -> evidence.Series (values, unit, source; the reason where not recorded)
    evidence: evidence_fold.CaseEvidence = field(default_factory=evidence_fold.CaseEvidence)

    def series(self, metric: str) -> list[tuple[float, float]]:
        """(start, value) of each ok value of a metric; start nan when not recorded."""
        values = self.values.get(metric, ())
        at = self.where.get(metric) or range(len(values))
        return [(self.started[i], v) for i, v in zip(at, values)]


@dataclass
class PartFacts:
    part: str
    benchmark: str                  # as its first record says, like its experiment and run id
    experiment: str
    run_id: str
    varied: list[str]
    present: set[str] = field(default_factory=set)      # metric names of any record
    units: dict[str, str] = field(default_factory=dict)  # metric -> unit (of the last ok record)
    cases: dict[str, CaseFacts] = field(default_factory=dict)   # in first-seen order
    # the jobs of a drift reference (Record.drift_reference): kept out of
    # its case's facts, their series read by drift.py
    reference: CaseFacts | None = None
    # what a page says of the part's benchmark (present/publish.py), drift references included:
    # the ok records' binary names, versions, paths and sha256 (each once, first seen first),
    # whether any ok record ran, whether a skipped one said "not found", each distinct stack
    binaries: dict[str, list] = field(default_factory=lambda: {k: [] for k in BINARY_KEYS})
    ran: bool = False
    not_found: bool = False
    stacks: list[dict] = field(default_factory=list)


@dataclass
class Digest:
    parts: dict[str, PartFacts]
    counts: dict[str, int]          # records by status
    reps_of: dict[tuple, tuple]     # (part, case_id) -> the repetitions it has a record of
    raw_errors: int                 # records whose raw outputs were not all stored
    experiment: str                 # the first record's
    varied: set[str]                # every record's varied keys
    # for a page, in record order: the first ReFrame version a record names; each flagged case's
    # flags (text -> the repetitions it concerns); per findings fold (a layer's, by the key it
    # names: Layer.findings_fold), each case's findings ((rule, text) -> repetitions) and the
    # other outcomes (text -> repetitions)
    reframe: str | None = None
    flags: dict[tuple, dict[str, list]] = field(default_factory=dict)
    findings: dict[str, dict[tuple, tuple[dict, dict]]] = field(default_factory=dict)

    @property
    def records(self) -> int:
        return sum(self.counts.values())

    def recorded(self, job: tuple) -> bool:
        """Whether a (part, case_id, repetition) job has a record."""
        return job[2] in self.reps_of.get(job[:2], ())

    def summarize(self) -> None:
        """Each case's summary of each metric, computed now (for a digest that is kept)."""
        for part in self.parts.values():
            for case in part.cases.values():
                case.summaries = {m: stats.pack(stats.summarize(v)) for m, v in case.values.items()}

    def case(self, part: str, case_id: str) -> CaseFacts | None:
        facts = self.parts.get(part)
        return None if facts is None else facts.cases.get(case_id)


def fold(records: Iterable[Record]) -> Digest:
    """The records (any iterable of them: a run's may be folded as they are decoded) by case."""
    parts: dict[str, PartFacts] = {}
    counts = {s: 0 for s in STATUSES}
    reps_of: dict[tuple, list] = {}
    varied: set[str] = set()
    raw_errors = 0
    versions: dict[tuple, set] = {}
    hints: dict[str, list[str]] = {}        # part -> its varied keys with a value in effect
    first = None
    page = Digest({}, {}, {}, 0, "", set(),     # the page's facts, gathered as records come
                  findings={fold: {} for fold, _key in findings_folds()})
    for rec in records:
        if first is None:
            first = rec
        counts[rec.status] = counts.get(rec.status, 0) + 1
        reps_of.setdefault((rec.part, rec.case_id), []).append(rec.repetition)
        varied.update(rec.varied)
        raw_errors += bool(rec.raw.get("errors"))
        part = parts.get(rec.part)
        if part is None:
            part = parts[rec.part] = PartFacts(rec.part, rec.benchmark, rec.experiment, rec.run_id,
                                               list(rec.varied))
            hints[rec.part] = [k for k in part.varied if shows_effective(k)]
        _fold_page(page, part, rec)
        if rec.drift_reference:
            case = part.reference
            if case is None:
                case = part.reference = CaseFacts(rec.part, rec.case_id, part.benchmark, rec.params)
            _fold_reference(case, rec)
            continue
        case = part.cases.get(rec.case_id)
        if case is None:
            case = part.cases[rec.case_id] = CaseFacts(rec.part, rec.case_id, part.benchmark, rec.params)
            versions[(rec.part, rec.case_id)] = set()
        for m in rec.metrics:
            part.present.add(m.name)
        if rec.ok:
            case.ok += 1
            versions[(rec.part, rec.case_id)].add(rec.provenance.binary_version)
            for key in hints[rec.part]:
                seen = rec.observed.effective_shown(key)   # typed like the request (4, not "4")
                if seen is None:
                    continue
                values = case.effective.setdefault(key, [])
                if seen not in values:
                    values.append(seen)
            _add_values(case, rec)
            evidence_fold.add(case.evidence, rec)
            for m in rec.metrics:
                case.reps.setdefault(m.name, []).append(rec.repetition)
                part.units[m.name] = m.unit
                base = m.name.removesuffix(OWN_MAX_SUFFIX)
                if base != m.name:
                    case.own_max.setdefault(base, array("d")).append(m.value)
        elif rec.status == "skipped":
            case.skipped.append(rec.error or "skipped")
        elif rec.status == "aborted":
            case.aborted.append(rec.error or "aborted")
        else:
            case.failed.append(rec.error or "failed")
        for note in rec.notes():
            if note not in case.notes:
                case.notes.append(note)
    # equal lists once (most cases have the same repetitions, most lists are empty): a smaller
    # cache entry that loads faster; nothing changes a digest once folded
    same: dict[tuple, object] = {}
    for part in parts.values():
        for case in part.cases.values():
            case.versions = frozenset(versions[(part.part, case.case_id)])
            case.reps = {m: same.setdefault(tuple(r), r) for m, r in case.reps.items()}
            for name in ("failed", "skipped", "aborted", "notes"):
                if not getattr(case, name):
                    setattr(case, name, same.setdefault((name,), []))
    reps = {k: same.setdefault(("reps",) + tuple(v), tuple(v)) for k, v in reps_of.items()}
    return Digest(parts, counts, reps, raw_errors, first.experiment if first else "", varied,
                  page.reframe, page.flags, page.findings)


def _fold_page(page: Digest, part: PartFacts, rec: Record) -> None:
    """What a page (present/publish.py) reads of a record, every record (references too)."""
    prov = rec.provenance
    if page.reframe is None and prov.get("reframe"):
        page.reframe = prov.get("reframe")
    if rec.ok:
        part.ran = True
        binary = prov.binary
        for key in BINARY_KEYS:
            value = binary.get(key)
            if value and value not in part.binaries[key]:
                part.binaries[key].append(value)
    elif rec.status == "skipped" and "not found" in str(rec.error or ""):
        part.not_found = True
    stack = prov.get("stack")
    if isinstance(stack, dict) and stack not in part.stacks:
        part.stacks.append(stack)
    job = (rec.part, rec.case_id)
    for flag in rec.notes():
        page.flags.setdefault(job, {}).setdefault(str(flag), []).append(rec.repetition)
    for fold, key in findings_folds():
        _fold_findings(page.findings[fold], job, rec.observed.get(key), rec.repetition)


def _fold_findings(fold: dict, job: tuple, part, repetition: int) -> None:
    """A record's part that plays the findings role (status, reason, findings [{rule, text}])."""
    if isinstance(part, dict):
        findings, other = fold.setdefault(job, ({}, {}))
        for f in part.get("findings") or []:
            key = ((shown(f.get("rule"), KEY), shown(f.get("text"), KEY)) if isinstance(f, dict)
                   else (None, str(f)))
            findings.setdefault(key, []).append(repetition)
        status = part.get("status", "unknown")
        if status != "ok":
            why = f"{status}: {part.get('reason') or 'no reason recorded'}"
            other.setdefault(why, []).append(repetition)
        elif not part.get("findings"):
            other.setdefault("ok: no findings", []).append(repetition)


def _fold_reference(case: CaseFacts, rec: Record) -> None:
    """A drift reference's job: its status, start and values (nothing else is read of them)."""
    if not rec.ok:
        getattr(case, rec.status if rec.status in ("skipped", "aborted") else "failed").append(
            rec.error or rec.status)
        return
    case.ok += 1
    _add_values(case, rec)


def _add_values(case: CaseFacts, rec: Record) -> None:
    """An ok record's start and metric values."""
    at = len(case.started)
    start = rec.started
    case.started.append(math.nan if start is None else start)
    for m in rec.metrics:
        values = case.values.setdefault(m.name, array("d"))
        if m.name in case.where:
            case.where[m.name].append(at)
        elif len(values) != at:       # an ok record before lacked it: positions kept
            case.where[m.name] = [*range(len(values)), at]
        values.append(m.value)


# ------------------------------------------------------------------------- as a run's file
# A digest as JSON, one column per fact of a part's cases (recordcache.py writes and checks the
# file a run keeps beside its records). Plain JSON, never a pickle: the file comes with the run,
# from whoever made or copied it. FORMAT changes whenever fold() or this layout does, so a
# digest of another fold is never read as this one's.
FORMAT = 6          # 6: each case's evidence (evidence.py); 5: a job that measured nothing
                    # gives no notes (Record.notes)
_LISTS = ("failed", "skipped", "aborted", "notes")


def to_json(d: Digest) -> dict:
    parts = {}
    for name, p in d.parts.items():
        cases = list(p.cases.values())
        metrics = sorted({m for c in cases for m in (*c.values, *c.own_max)})
        parts[name] = {
            "benchmark": p.benchmark, "experiment": p.experiment, "run_id": p.run_id,
            "varied": p.varied, "present": sorted(p.present), "units": p.units,
            "case_id": [c.case_id for c in cases], "benchmark_of": [c.benchmark for c in cases],
            "params": [c.params for c in cases], "ok": [c.ok for c in cases],
            **{k: [getattr(c, k) for c in cases] for k in _LISTS},
            "effective": [c.effective for c in cases],
            "versions": [sorted(c.versions, key=repr) for c in cases],
            "reps_of": [list(d.reps_of.get((name, c.case_id), ())) for c in cases],
            "started": [[None if math.isnan(t) else t for t in c.started] for c in cases],
            "metrics": {m: {"values": [list(c.values[m]) if m in c.values else None for c in cases],
                            "reps": [c.reps[m] if m in c.reps else None for c in cases],
                            "where": [c.where.get(m) for c in cases],
                            "own_max": [list(c.own_max[m]) if m in c.own_max else None
                                        for c in cases],
                            "summary": [b64encode(c.summaries[m]).decode()
                                        if c.summaries and m in c.summaries else None
                                        for c in cases]}
                        for m in metrics},
            "reference": None if p.reference is None else _reference_json(
                p.reference, d.reps_of.get((name, p.reference.case_id), ())),
            "binaries": p.binaries, "ran": p.ran, "not_found": p.not_found, "stacks": p.stacks,
            "evidence": evidence_fold.to_json(cases),
        }
    return {"format": FORMAT, "counts": d.counts, "raw_errors": d.raw_errors,
            "experiment": d.experiment, "varied": sorted(d.varied), "parts": parts,
            "reframe": d.reframe, "evidence_declared": evidence_fold.declared(),
            "flags": [[*job, [[text, reps] for text, reps in flags.items()]]
                      for job, flags in d.flags.items()],
            # each findings fold under its layer's key
            **{fold: [[*job, [[rule, text, reps] for (rule, text), reps in findings.items()],
                      [[text, reps] for text, reps in other.items()]]
                      for job, (findings, other) in d.findings.get(fold, {}).items()]
               for fold, _key in findings_folds()},
            # (part, case) pairs with a record but no CaseFacts cannot exist: reps_of is per case
            "summarized": all(c.summaries is not None for p in d.parts.values()
                              for c in p.cases.values())}


def from_json(data: dict) -> Digest:
    """The digest to_json gave; KeyError, TypeError or ValueError for anything else."""
    if data["format"] != FORMAT:
        raise ValueError(f"digest format {data['format']!r}, not {FORMAT}")
    if data["evidence_declared"] != evidence_fold.declared():
        raise ValueError("the evidence was declared otherwise when this digest was folded")
    parts, reps_of = {}, {}
    same: dict[tuple, object] = {}
    summarized = data["summarized"] is True
    for name, p in data["parts"].items():
        pf = PartFacts(name, p["benchmark"], p["experiment"], p["run_id"], list(p["varied"]),
                       set(p["present"]), dict(p["units"]))
        ids = p["case_id"]
        columns = [p[k] for k in ("benchmark_of", "params", "ok", *_LISTS, "effective",
                                  "versions", "reps_of", "started")]
        if any(len(col) != len(ids) for col in columns):
            raise ValueError(f"part {name}: columns of unequal length")
        cases = []
        for (case_id, bench, params, ok, failed, skipped, aborted, notes, effective,
             versions, reps, started) in zip(ids, *columns):
            if type(ok) is not int or type(params) is not dict or type(effective) is not dict:
                raise ValueError(f"part {name}: case {case_id!r} is not a digest's")
            case = CaseFacts(name, str(case_id), bench, params, ok,
                             failed or same.setdefault(("failed",), []),
                             skipped or same.setdefault(("skipped",), []),
                             aborted or same.setdefault(("aborted",), []),
                             notes or same.setdefault(("notes",), []),
                             effective, {}, {}, {}, frozenset(versions),
                             {} if summarized else None,
                             array("d", [math.nan if t is None else t for t in started]))
            cases.append(case)
            pf.cases[case.case_id] = case
            reps_of[(name, case.case_id)] = same.setdefault(("reps",) + tuple(reps), tuple(reps))
        for m, col in p["metrics"].items():     # a column at a time
            if not (len(col["values"]) == len(col["reps"]) == len(col["own_max"])
                    == len(col["where"]) == len(ids)):
                raise ValueError(f"part {name}: metric {m}: columns of unequal length")
            for case, values, reps, where in zip(cases, col["values"], col["reps"], col["where"]):
                if values is not None:
                    case.values[m] = array("d", values)
                    case.reps[m] = same.setdefault(tuple(reps), reps)
                    if where is not None:
                        if len(where) != len(values) or not all(
                                type(i) is int and 0 <= i < len(case.started) for i in where):
                            raise ValueError(f"part {name}: metric {m}: positions out of range")
                        case.where[m] = where
            for case, values in zip(cases, col["own_max"]):
                if values is not None:
                    case.own_max[m] = array("d", values)
            if summarized:
                for case, packed in zip(cases, col["summary"]):
                    if packed is not None:
                        case.summaries[m] = a2b_base64(packed)
        if p["reference"] is not None:
            pf.reference = _reference_from(name, pf.benchmark, p["reference"])
            # a reference case whose every job is a reference's has no column of its own
            reps_of.setdefault((name, pf.reference.case_id), tuple(p["reference"]["reps_of"]))
        _page_part_from(pf, p)
        evidence_fold.from_json(p["evidence"], cases, name)
        parts[name] = pf
    reframe = data["reframe"]
    if reframe is not None and type(reframe) is not str:
        raise ValueError("reframe: not a version")
    flags = _flags_from(data["flags"])
    findings = {fold: _findings_from(data[fold]) for fold, _key in findings_folds()}
    if any(job[0] not in parts for job in (*flags, *(j for f in findings.values() for j in f))):
        raise ValueError("a flagged case of a part the digest does not have")
    return Digest(parts, dict(data["counts"]), reps_of, int(data["raw_errors"]),
                  str(data["experiment"]), set(data["varied"]), reframe, flags, findings)


def _reference_json(c: CaseFacts, reps_of) -> dict:
    return {"case_id": c.case_id, "params": c.params, "ok": c.ok, "reps_of": list(reps_of),
            **{k: getattr(c, k) for k in ("failed", "skipped", "aborted")},
            "started": [None if math.isnan(t) else t for t in c.started],
            "values": {m: list(v) for m, v in c.values.items()}, "where": c.where}


def _reference_from(part: str, benchmark: str, r: dict) -> CaseFacts:
    case = CaseFacts(part, str(r["case_id"]), benchmark, dict(r["params"]), int(r["ok"]),
                     list(r["failed"]), list(r["skipped"]), list(r["aborted"]),
                     started=array("d", [math.nan if t is None else t for t in r["started"]]))
    for m, values in r["values"].items():
        case.values[m] = array("d", values)
        where = r["where"].get(m)
        if where is None and len(values) > len(case.started) or where is not None and (
                len(where) != len(values) or not all(type(i) is int and 0 <= i < len(case.started)
                                                     for i in where)):
            raise ValueError(f"part {part}: the drift reference's {m}: positions out of range")
        if where is not None:
            case.where[m] = list(where)
    return case


def _page_part_from(pf: PartFacts, p: dict) -> None:
    binaries = p["binaries"]
    if type(binaries) is not dict or sorted(binaries) != sorted(BINARY_KEYS) or not all(
            type(v) is list for v in binaries.values()):
        raise ValueError(f"part {pf.part}: binaries: not a digest's")
    if type(p["ran"]) is not bool or type(p["not_found"]) is not bool or type(p["stacks"]) is not list \
            or not all(type(st) is dict for st in p["stacks"]):
        raise ValueError(f"part {pf.part}: what ran: not a digest's")
    pf.binaries, pf.ran, pf.not_found, pf.stacks = binaries, p["ran"], p["not_found"], p["stacks"]


def _job(part, case_id) -> tuple:
    if type(part) is not str or type(case_id) is not str:
        raise ValueError("a flagged case: not a part and case id")
    return part, case_id


def _reps_list(reps) -> list:
    if type(reps) is not list or not all(r is None or type(r) is int for r in reps):
        raise ValueError("repetitions: not a list of repetitions")
    return reps


def _flags_from(rows) -> dict:
    out = {}
    for part, case_id, flags in rows:
        out[_job(part, case_id)] = {_text(text): _reps_list(reps) for text, reps in flags}
    return out


def _findings_from(rows) -> dict:
    out = {}
    for part, case_id, findings, other in rows:
        out[_job(part, case_id)] = (
            {(_text_or_none(rule), _text_or_none(text)): _reps_list(reps)
             for rule, text, reps in findings},
            {_text(text): _reps_list(reps) for text, reps in other})
    return out


def _text_or_none(value):
    if value is not None and type(value) is not str:
        raise ValueError("a finding: not text")
    return value


def _text(value) -> str:
    if type(value) is not str:
        raise ValueError("a flag or outcome: not text")
    return value
