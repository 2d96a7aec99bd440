"""Drift inside a run: did the file system get faster or slower while the run went on?

Without a reference case, the residuals of every case against its own mean are tested for a
trend over the records' start times (Record.started): the slope of log(value) on time inside
cells (stats.within_slope), for each part's first table metric that has a better side. A run
drifts when the slope's 95% interval excludes 0. Its size is said per hour and over the run's
span, with the interval, as percent changes: exp(slope * hours) - 1, over the time the slope was
measured on (the mean span of a case's repetitions), never extrapolated beyond it.

The test can only see drift inside the time a case's repetitions span. In a run ordered like
the matrix (every repetition of a case back to back) that is a few seconds per case, so a slow
hour that falls between cases shifts whole cases and is not seen here; an interleaved order
(repetition k of every case before repetition k+1 of any) spreads each case over the run.

`compare` declares no difference smaller than the drift measured in either run (floor()).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from .. import benchmarks, stats
from ..results.record import Record
from .report import default_metrics

HOUR = 3600.0


@dataclass(frozen=True)
class Drift:
    part: str
    metric: str
    slope: stats.Slope         # of log(value) per hour
    span_hours: float          # the mean time a case's repetitions span: what the slope measures
    run_hours: float           # first to last start time of the records tested
    cases: int

    @property
    def drifts(self) -> bool:
        return not (self.slope.low <= 0 <= self.slope.high)

    def percent(self, hours: float) -> tuple[float, float, float]:
        """The change over `hours` as percents: estimate, low, high."""
        return tuple(100 * math.expm1(min(v * hours, 700.0)) for v in
                     (self.slope.slope, self.slope.low, self.slope.high))

    @property
    def over_span(self) -> tuple[float, float, float]:
        """The change over the time a case's repetitions span (never extrapolated further)."""
        return self.percent(self.span_hours)

    @property
    def size(self) -> float:
        """The largest change the interval allows over a case's span, as a fraction (compare)."""
        _, low, high = self.over_span
        return max(abs(low), abs(high)) / 100

    def short(self) -> str:
        """For `iolab runs`: 'drift in main (write_bw) +41.5% over 2 s (95% CI ...)'."""
        est, low, high = self.over_span
        return (f"drift in {self.part} ({self.metric}) {est:+.1f}% over {_duration(self.span_hours)}"
                f" (95% CI {low:+.1f}% to {high:+.1f}%)")

    def text(self) -> str:
        est, low, high = self.over_span
        verdict = "drift" if self.drifts else "no drift found"
        whole = self.span_hours >= 0.5 * self.run_hours
        over = (f"over the run's {_duration(self.run_hours)}" if whole else
                f"over the {_duration(self.span_hours)} a case's repetitions span (the run: "
                f"{_duration(self.run_hours)}; cases run back to back, so drift between them "
                "is not measured)")
        return (f"{verdict} in {self.part} ({self.metric}): {est:+.1f}% {over}, 95% CI "
                f"{low:+.1f}% to {high:+.1f}%; p = {self.slope.p:.3g}, {self.slope.n} records of "
                f"{self.cases} cases")


def _duration(hours: float) -> str:
    seconds = hours * HOUR
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * HOUR:
        return f"{seconds / 60:.0f} min"
    return f"{hours:.1f} h"


def _metric(records: list[Record], benchmark: str) -> str | None:
    """The part's first table metric with a better side that its records report."""
    present = {m.name for rec in records for m in rec.metrics}
    if benchmark not in benchmarks.registry():
        return None
    spec = benchmarks.get(benchmark)
    for name in default_metrics(benchmark):
        described = spec.metric(name)
        if name in present and described is not None and described.better:
            return name
    return None


def residual_trend(records: list[Record], metric: str | None = None) -> list[Drift]:
    """Each part's drift, from its ok records with a start time and a positive value."""
    parts: dict[str, list[Record]] = {}
    for rec in records:
        if rec.ok:
            parts.setdefault(rec.part, []).append(rec)
    out = []
    for part, recs in parts.items():
        name = metric or _metric(recs, recs[0].benchmark)
        if name is None:
            continue
        cells: dict[str, list[tuple[float, float]]] = {}
        times: list[float] = []
        for rec in recs:
            value, start = rec.value(name), rec.started
            if start is None or not isinstance(value, (int, float)) or not value > 0 \
                    or not math.isfinite(value):
                continue
            cells.setdefault(rec.case_id, []).append((start / HOUR, math.log(value)))
            times.append(start)
        slope = stats.within_slope(cells.values())
        if slope is None:
            continue
        spans = [max(t for t, _ in c) - min(t for t, _ in c) for c in cells.values() if len(c) >= 2]
        out.append(Drift(part, name, slope, sum(spans) / len(spans),
                         (max(times) - min(times)) / HOUR, len(spans)))
    return out


def of_run(run) -> list[Drift]:
    """The drift of a run (results.run.Run), by part."""
    return residual_trend(run.records)


def notes(drifts: list[Drift]) -> list[str]:
    """Lines for a run's notes: the parts that drift."""
    return [d.text() for d in drifts if d.drifts]


def floor(drifts: list[Drift], part: str) -> Drift | None:
    """The drift of a part that a difference must exceed to be declared; None: none measured."""
    return next((d for d in drifts if d.part == part and d.drifts), None)
