"""Each case's evidence (issue 39), folded per repetition into a run's digest (digest.py).

A piece of evidence is what a layer or the benchmark measured of a job that may explain its
result: OSDs that received data, the share of small writes, the aggregators in effect
(layers.base.Evidence). Every ok record gives one entry per declared spec of its layers and its
benchmark: a value, or None with the reason it was not recorded. Here they are kept per case as
one Series per name: the value of each ok repetition, its unit and source, and the reasons kept
where there was no value. `iolab why` reads them through the run's digest: `of(run)`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from .. import benchmarks
from ..layers import registry
from .record import Record


@dataclass
class Series:
    """One piece of evidence of a case over its ok repetitions, in record order."""

    unit: str
    source: str
    reps: list = field(default_factory=list)
    values: list = field(default_factory=list)      # a float, or None where not recorded
    why: list = field(default_factory=list)         # None where recorded, else the reason

    def recorded(self) -> list[tuple[int, float]]:
        """(repetition, value) of each repetition that has a value."""
        return [(r, v) for r, v in zip(self.reps, self.values) if v is not None]

    def reasons(self) -> list[str]:
        """Why values are missing, each reason once, first seen first."""
        return list(dict.fromkeys(w for w in self.why if w is not None))


def specs() -> tuple:
    """Every declared piece of evidence: the layers' in their order, then each benchmark's."""
    return registry.evidence_specs() + tuple(
        spec for bench in benchmarks.registry().values() for spec in bench.evidence_specs)


def declared() -> str:
    """A digest of what is declared (names, units, sources, kinds): a digest folded when the
    declarations differed is not read as this one's (from_json)."""
    rows = sorted((s.name, s.unit, s.source, s.kind) for s in specs())
    return hashlib.sha256(json.dumps(rows).encode()).hexdigest()[:16]


def of_record(rec: Record) -> list:
    """Every layer's and the benchmark's evidence of one record."""
    out = registry.evidence(rec.observed, rec.params)
    bench = benchmarks.registry().get(rec.benchmark)
    if bench is not None and bench.evidence_specs:
        out += bench.evidence({m.name: m.value for m in rec.metrics}, rec.observed.benchmark,
                              rec.params)
    return out


class CaseEvidence(Mapping):
    """A case's evidence, name -> Series, made when first read: a digest of 100k records holds
    millions of entries, and a table that never reads them must not pay for them (folding one
    costs an append per record, loading one only the check of its shape)."""

    __slots__ = ("_series", "_rows", "_raw")

    def __init__(self):
        self._series: dict | None = None
        self._rows: list = []            # (repetition, [Evidence]) of each ok record, folded
        self._raw: tuple | None = None   # what _decode reads of a loaded digest

    def add(self, rep, items) -> None:
        self._series = None
        self._rows.append((rep, items))

    def _decoded(self) -> dict:
        if self._series is None:
            if self._raw is not None:
                self._series = _decode(*self._raw)
            else:
                self._series = {}
                for rep, items in self._rows:
                    for e in items:
                        series = self._series.get(e.name)
                        if series is None:
                            series = self._series[e.name] = Series(e.unit, e.source)
                        series.reps.append(rep)
                        series.values.append(e.value)
                        series.why.append(e.why)
        return self._series

    def __getitem__(self, name: str) -> Series:
        return self._decoded()[name]

    def __iter__(self):
        return iter(self._decoded())

    def __len__(self) -> int:
        return len(self._decoded())

    def __repr__(self) -> str:
        return f"CaseEvidence({self._decoded()!r})"


def add(evidence: CaseEvidence, rec: Record) -> None:
    """An ok record's evidence added to its case's."""
    evidence.add(rec.repetition, of_record(rec))


def of(run) -> dict[tuple[str, str], dict[str, Series]]:
    """(part, case id) -> the case's evidence by name, from the run's digest."""
    return {(part.part, case.case_id): case.evidence for part in run.digest.parts.values()
            for case in part.cases.values()}


# ------------------------------------------------------------------------- as a digest's JSON
# Per part, a column per name (as digest.py keeps metrics): its unit and source, and per case the
# index of the one reason none of its repetitions has a value for, or the values (each a float),
# or {"v": values with None, "w": reason indices with None}; a column whose every case has the
# same one reason is that index alone (a layer absent from the whole run). Each case's
# repetitions once: every ok record gives every declared name of its layers and benchmark.
def _columns(ev: CaseEvidence) -> tuple[list, dict]:
    """(repetitions, name -> (unit, source, values, reasons)) of a case, straight from its rows."""
    if ev._raw is not None or not ev._rows:
        decoded = ev._decoded()
        reps = next(iter(decoded.values())).reps if decoded else []
        return list(reps), {n: (s.unit, s.source, s.values, s.why) for n, s in decoded.items()}
    names: dict = {}
    for _rep, items in ev._rows:
        for e in items:
            col = names.get(e.name)
            if col is None:
                col = names[e.name] = (e.unit, e.source, [], [])
            col[2].append(e.value)
            col[3].append(e.why)
    return [rep for rep, _items in ev._rows], names


def to_json(cases: list) -> dict:
    units: dict[str, list] = {}
    reasons: dict[str, int] = {}
    columns: dict[str, list] = {}
    reps_of = []
    for i, case in enumerate(cases):
        reps, names = _columns(case.evidence)
        reps_of.append(reps)
        for name, (unit, source, values, why) in names.items():
            if len(values) != len(reps):
                raise ValueError(f"case {case.case_id}: evidence {name} of other repetitions")
            units.setdefault(name, [unit, source])
            col = columns.setdefault(name, [None] * len(cases))
            first = why[0] if why else None
            if first is not None and why.count(first) == len(why):
                col[i] = reasons.setdefault(first, len(reasons))
            elif why.count(None) == len(why):
                col[i] = values
            else:
                col[i] = {"v": values, "w": [None if w is None else reasons.setdefault(w, len(reasons))
                                             for w in why]}
    for name, col in columns.items():
        if type(col[0]) is int and col.count(col[0]) == len(col):
            columns[name] = col[0]
    return {"units": units, "reasons": list(reasons), "reps": reps_of, "columns": columns}


def from_json(data: dict, cases: list, part: str) -> None:
    """Each case's evidence from to_json's columns: their shape checked now (ValueError), each
    case's values when first read (ValueError then, for an entry that is not to_json's)."""
    units, reasons, reps_of, columns = data["units"], data["reasons"], data["reps"], data["columns"]
    if len(reps_of) != len(cases) or set(columns) != set(units) or not all(
            type(r) is str for r in reasons) or not all(
            type(u) is list and len(u) == 2 for u in units.values()) or not all(
            type(c) is int or type(c) is list and len(c) == len(cases) for c in columns.values()):
        raise ValueError(f"part {part}: evidence columns of unequal length")
    for i, case in enumerate(cases):
        case.evidence = CaseEvidence()
        case.evidence._raw = (i, reps_of[i], columns, units, reasons, part)


def _decode(i: int, reps, columns: dict, units: dict, reasons: list, part: str) -> dict:
    if type(reps) is not list or not all(type(r) is int or r is None for r in reps):
        raise ValueError(f"part {part}: evidence repetitions: not a digest's")
    out = {}
    for name, col in columns.items():
        got = col if type(col) is int else col[i]
        if got is None:
            continue                        # a name this case's layers and benchmark lack
        if type(got) is int:
            values, why = [None] * len(reps), [got] * len(reps)
        elif type(got) is list:
            values, why = got, [None] * len(got)
        else:
            values, why = got["v"], got["w"]
        if not (len(reps) == len(values) == len(why)) or not all(
                (type(v) is float and w is None) or (v is None and type(w) is int
                                                     and 0 <= w < len(reasons))
                for v, w in zip(values, why)):
            raise ValueError(f"part {part}: evidence {name}: not a digest's")
        unit, source = units[name]
        out[name] = Series(str(unit), str(source), reps, list(values),
                           [None if w is None else reasons[w] for w in why])
    return out
