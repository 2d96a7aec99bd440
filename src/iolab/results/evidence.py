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


def add(evidence: dict, rec: Record) -> None:
    """An ok record's evidence added to its case's (name -> Series)."""
    for e in of_record(rec):
        series = evidence.get(e.name)
        if series is None:
            series = evidence[e.name] = Series(e.unit, e.source)
        series.reps.append(rec.repetition)
        series.values.append(e.value)
        series.why.append(e.why)


def of(run) -> dict[tuple[str, str], dict[str, Series]]:
    """(part, case id) -> the case's evidence by name, from the run's digest."""
    return {(part.part, case.case_id): case.evidence for part in run.digest.parts.values()
            for case in part.cases.values()}


# ------------------------------------------------------------------------- as a digest's JSON
# Per part: each name's unit and source once, the reasons once (indexed), then per case
# name -> [repetitions, values, reason indices or None where every repetition has a value].
def to_json(cases: list) -> dict:
    units: dict[str, list] = {}
    reasons: dict[str, int] = {}
    rows = []
    for case in cases:
        row = {}
        for name, s in case.evidence.items():
            units.setdefault(name, [s.unit, s.source])
            why = None if all(w is None for w in s.why) else [
                None if w is None else reasons.setdefault(w, len(reasons)) for w in s.why]
            row[name] = [list(s.reps), list(s.values), why]
        rows.append(row)
    return {"units": units, "reasons": list(reasons), "cases": rows}


def from_json(data: dict, cases: list, part: str) -> None:
    """Each case's evidence from to_json's columns (ValueError where they are not its)."""
    units, reasons, rows = data["units"], data["reasons"], data["cases"]
    if len(rows) != len(cases) or not all(type(r) is str for r in reasons):
        raise ValueError(f"part {part}: evidence columns of unequal length")
    for case, row in zip(cases, rows):
        for name, (reps, values, why) in row.items():
            unit, source = units[name]
            if why is None:
                why = [None] * len(values)
            if not (len(reps) == len(values) == len(why)) or not all(
                    type(r) is int or r is None for r in reps) or not all(
                    (type(v) is float and w is None) or (v is None and type(w) is int
                                                         and 0 <= w < len(reasons))
                    for v, w in zip(values, why)):
                raise ValueError(f"part {part}: evidence {name}: not a digest's")
            case.evidence[name] = Series(str(unit), str(source), list(reps), list(values),
                                         [None if w is None else reasons[w] for w in why])
