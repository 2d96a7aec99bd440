"""Drift inside a run: did the file system get faster or slower while the run went on?

Without a reference case, two tests look at the residuals of every case against its own mean,
for each part's first table metric that has a better side, from the run's digest (each ok
value with its record's start time, Record.started: no record is decoded):

- the trend test: the slope of log(value) on start time inside cells (stats.within_slope). It
  drifts when the slope's 95% interval excludes 0. Its size is said per hour and over the time
  it was measured on (the mean span of a case's repetitions), with the interval, as percent
  changes exp(slope * hours) - 1, never extrapolated beyond that span. It misses a slow period
  that recovers: a dip in the middle of a run has no slope.
- the block test: each case's repetitions ranked by start time, block k holding each case's
  k-th one, and log(value) fitted by case + block (a two-way additive model, the analysis of a
  randomized complete block design; stats.block_effects). It drifts when the F test of the
  block effect gives p < 0.05. Its size is the block furthest from the median block, as a
  percent, with that block's time window (first to last start in it).

With a reference case (`drift: {case, every}` in the experiment: the case runs once more at the
start, after every N jobs and at the end, its records carrying the role drift-reference), the
part's test is the reference test in place of those two: the reference's own series over time,
which no other case's noise or effect blurs: the slope of log(value) on time (its 95% interval
excludes 0), and its largest departure from its median against the noise of its successive
differences (stats.departure_test, p < 0.05), which sees a step or a slow period that recovers.
Its size is the larger of the two, and the note always says how many reference jobs ran (they
are not in the table's statistics).

A part drifts when either test finds it, and the note says which. Each test alone is wrong at
most 5% of the time on a run without drift; the two together at most about 10%.

What each can see depends on the run order. Interleaved (`order: blocks`, the default: repetition
k of every case before repetition k+1 of any) a block is a stretch of time and every case spans
the run, so both tests see drift over the whole run. In matrix order (each case's repetitions
back to back) a case spans a few seconds: the trend test then measures only inside that span,
and a block holds each case's k-th repetition across the whole run, so only a change between
neighbouring repetitions (a first one slower, a cache warming up) is seen; a slow hour between
cases shifts whole cases and is seen by neither.

`compare` declares no difference smaller than the drift measured in either run (floor()).
"""

from __future__ import annotations

import datetime
import math
import statistics
from dataclasses import dataclass

from .. import benchmarks, stats
from ..results.digest import Digest, PartFacts, fold
from ..results.record import Record
from .report import default_metrics

HOUR = 3600.0


@dataclass(frozen=True)
class Drift:
    """The trend test of a part."""
    part: str
    metric: str
    slope: stats.Slope         # of log(value) per hour
    span_hours: float          # the mean time a case's repetitions span: what the slope measures
    run_hours: float           # first to last start time of the records tested
    cases: int
    test = "trend test"

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
        """For `iolab runs`: 'drift in main (write_bw) +41.5% over 2 s (95% CI ...; trend test)'."""
        est, low, high = self.over_span
        return (f"drift in {self.part} ({self.metric}) {est:+.1f}% over {_duration(self.span_hours)}"
                f" (95% CI {low:+.1f}% to {high:+.1f}%; {self.test})")

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
                f"{self.cases} cases ({self.test}: the slope of log({self.metric}) on start time "
                "within cases)")


@dataclass(frozen=True)
class BlockDrift:
    """The block test of a part: block k is each case's k-th repetition in time."""
    part: str
    metric: str
    blocks: stats.Blocks
    windows: tuple[tuple[float, float], ...]     # block k's first and last start (unix s)
    interleaved: bool          # the run's order puts block k's jobs before block k+1's
    test = "block test"

    @property
    def drifts(self) -> bool:
        return self.blocks.p < stats.ALPHA

    @property
    def worst(self) -> int:
        """The block furthest from the median block (on the log scale)."""
        mid = statistics.median(self.blocks.effects)
        return max(range(len(self.blocks.effects)), key=lambda k: abs(self.blocks.effects[k] - mid))

    @property
    def percent(self) -> float:
        """That block against the median block, in percent."""
        mid = statistics.median(self.blocks.effects)
        return 100 * math.expm1(min(self.blocks.effects[self.worst] - mid, 700.0))

    @property
    def size(self) -> float:
        return abs(self.percent) / 100

    def window(self) -> str:
        start, end = self.windows[self.worst]
        return _span(start, end)

    def short(self) -> str:
        """'drift in main (write_bw) -40.1% in block 2 of 3 (22:01:05 to 22:01:40 UTC; block test,
        p = 0.0001)'."""
        where = self.window() if self.interleaved else "matrix order: spans the run"
        return (f"drift in {self.part} ({self.metric}) {self.percent:+.1f}% in block "
                f"{self.worst + 1} of {len(self.windows)} ({where}; {self.test}, "
                f"p = {self.blocks.p:.3g})")

    def text(self) -> str:
        b = self.blocks
        verdict = "drift" if self.drifts else "no drift found"
        k = self.worst + 1
        out = (f"{verdict} in {self.part} ({self.metric}): {self.percent:+.1f}% in block {k} of "
               f"{len(self.windows)} (each case's {_ordinal(k)} repetition in time, started "
               f"{self.window()}) against the median block; F = {b.f:.3g} on {b.df1} and {b.df2} "
               f"df, p = {b.p:.3g}, {b.n} records of {b.cells} cases ({self.test}: case + block "
               f"on log({self.metric}))")
        if not self.interleaved:
            out += ("; the run is in matrix order, so a block holds each case's k-th repetition "
                    "across the whole run, run back to back with its others: a slow period "
                    "between cases is not seen")
        return out


@dataclass(frozen=True)
class ReferenceDrift:
    """The reference test of a part: the drift reference case's own series over time."""
    part: str
    metric: str
    case_id: str
    jobs: int                   # reference jobs recorded, any status
    every: int | None           # as the run's order says
    points: tuple[tuple[float, float], ...]     # (start, log value), in time order
    slope: stats.Slope | None           # of log(value) per hour
    departure: stats.Departure | None
    test = "reference test"

    @property
    def run_hours(self) -> float:
        return (self.points[-1][0] - self.points[0][0]) / HOUR if self.points else 0.0

    @property
    def by_slope(self) -> bool:
        return self.slope is not None and not (self.slope.low <= 0 <= self.slope.high)

    @property
    def by_departure(self) -> bool:
        return self.departure is not None and self.departure.p < stats.ALPHA

    @property
    def drifts(self) -> bool:
        return self.by_slope or self.by_departure

    @property
    def over_run(self) -> tuple[float, float, float]:
        """The slope's change over the series' span, in percent: estimate, low, high."""
        return tuple(100 * math.expm1(min(v * self.run_hours, 700.0)) for v in
                     (self.slope.slope, self.slope.low, self.slope.high))

    @property
    def departure_percent(self) -> float:
        return 100 * math.expm1(min(self.departure.gap, 700.0))

    @property
    def size(self) -> float:
        sizes = [abs(self.departure_percent) / 100] if self.by_departure else []
        if self.by_slope:
            sizes.append(max(abs(v) for v in self.over_run[1:]) / 100)
        return max(sizes, default=0.0)

    def _found(self) -> list[str]:
        out = []
        if self.departure is not None:
            at = self.points[self.departure.index][0]
            out.append(f"largest departure from its median {self.departure_percent:+.1f}% at "
                       f"{_span(at, at).split(' to ')[0]} UTC (p = {self.departure.p:.3g})")
        if self.slope is not None:
            est, low, high = self.over_run
            out.append(f"slope {est:+.1f}% over {_duration(self.run_hours)} (95% CI {low:+.1f}% "
                       f"to {high:+.1f}%)")
        return out

    def short(self) -> str:
        shown = [f for f, hit in zip(self._found(), (self.by_departure, self.by_slope)) if hit]
        return (f"drift in {self.part} ({self.metric}) by reference case {self.case_id}: "
                f"{'; '.join(shown)} ({self.test})")

    def text(self) -> str:
        verdict = "drift" if self.drifts else "no drift found"
        every = f", every {self.every} jobs" if self.every else ""
        return (f"{verdict} in {self.part} ({self.metric}) by reference case {self.case_id}: "
                f"{self.jobs} reference job(s) (at the start{every} and at the end, not in the "
                f"table's statistics), {len(self.points)} with a value; "
                + ("; ".join(self._found()) or "too few values to test") + f" ({self.test})")


def _ordinal(k: int) -> str:
    return f"{k}{'th' if 10 <= k % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(k % 10, 'th')}"


def _span(start: float, end: float) -> str:
    a = datetime.datetime.fromtimestamp(start, datetime.timezone.utc)
    b = datetime.datetime.fromtimestamp(end, datetime.timezone.utc)
    shown = b.strftime("%H:%M:%S") if a.date() == b.date() else b.strftime("%Y-%m-%d %H:%M:%S")
    return f"{a.strftime('%Y-%m-%d %H:%M:%S')} to {shown} UTC"


def _duration(hours: float) -> str:
    seconds = hours * HOUR
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 2 * HOUR:
        return f"{seconds / 60:.0f} min"
    return f"{hours:.1f} h"


def _metric(part: PartFacts) -> str | None:
    """The part's first table metric with a better side that its records report."""
    if part.benchmark not in benchmarks.registry():
        return None
    spec = benchmarks.get(part.benchmark)
    for name in default_metrics(part.benchmark):
        described = spec.metric(name)
        if name in part.present and described is not None and described.better:
            return name
    return None


def _cells(part: PartFacts, metric: str) -> dict[str, list[tuple[float, float]]]:
    """Each case's (start, log value) of the metric, in time order (equal times in file order):
    the values with a start time that are positive and that the statistics take (stats.usable:
    the table sets the others aside and names them)."""
    out = {}
    for case in part.cases.values():
        pairs = sorted(((t, math.log(v)) for t, v in case.series(metric)
                        if math.isfinite(t) and v > 0 and stats.usable(v)), key=lambda p: p[0])
        if pairs:
            out[case.case_id] = pairs
    return out


def _trend(part: PartFacts, metric: str, cells: dict) -> Drift | None:
    slope = stats.within_slope([[(t / HOUR, y) for t, y in c] for c in cells.values()])
    if slope is None:
        return None
    spans = [c[-1][0] - c[0][0] for c in cells.values() if len(c) >= 2]
    times = [t for c in cells.values() for t, _ in c]
    return Drift(part.part, metric, slope, sum(spans) / len(spans) / HOUR,
                 (max(times) - min(times)) / HOUR, len(spans))


def _blocks(part: PartFacts, metric: str, cells: dict, interleaved: bool) -> BlockDrift | None:
    # a case whose start times tie (recorded to the second) has no order in time: left out
    cells = {cid: c for cid, c in cells.items() if len({t for t, _ in c}) == len(c)}
    found = stats.block_effects([[(k, y) for k, (_, y) in enumerate(c)] for c in cells.values()])
    if found is None:
        return None
    used = len(found.effects)       # blocks 0 .. used-1 (a block needs values of 2 cases)
    windows = []
    for k in range(used):
        times = [c[k][0] for c in cells.values() if len(c) > k]
        windows.append((min(times), max(times)))
    return BlockDrift(part.part, metric, found, tuple(windows), interleaved)


def _reference(part: PartFacts, metric: str, every: int | None) -> ReferenceDrift:
    ref = part.reference
    points = tuple(sorted(((t, math.log(v)) for t, v in ref.series(metric)
                           if math.isfinite(t) and v > 0 and stats.usable(v)), key=lambda p: p[0]))
    slope = stats.within_slope([[(t / HOUR, y) for t, y in points]]) if points else None
    return ReferenceDrift(part.part, metric, ref.case_id,
                          ref.ok + len(ref.failed) + len(ref.skipped) + len(ref.aborted), every,
                          points, slope, stats.departure_test([y for _, y in points]))


def of_digest(facts: Digest, interleaved: bool = True, metric: str | None = None,
              tests: tuple[str, ...] = ("trend", "blocks"), every: dict | None = None) -> list:
    """Each part's tests where its values allow them: a part with a drift reference, its
    reference test (ReferenceDrift); the others, the trend and block tests (Drift, BlockDrift).
    every: part -> the reference's N, as the run's order says."""
    out = []
    for part in facts.parts.values():
        name = metric or _metric(part)
        if name is None:
            continue
        if part.reference is not None:
            out.append(_reference(part, name, (every or {}).get(part.part)))
            continue
        cells = _cells(part, name)
        if "trend" in tests and (found := _trend(part, name, cells)) is not None:
            out.append(found)
        if "blocks" in tests and (found := _blocks(part, name, cells, interleaved)) is not None:
            out.append(found)
    return out


def residual_trend(records: list[Record], metric: str | None = None) -> list[Drift]:
    """Each part's trend test, from its ok records with a start time and a positive value."""
    return of_digest(fold(records), metric=metric, tests=("trend",))


def block_test(records: list[Record], metric: str | None = None,
               interleaved: bool = True) -> list[BlockDrift]:
    """Each part's block test, from its ok records with a start time and a positive value."""
    return of_digest(fold(records), interleaved, metric, tests=("blocks",))


def interleaved(run) -> bool:
    """Whether the run's order interleaves the cases (a manifest with `order: blocks`); a run
    without an order in its manifest ran in matrix order (iolab's before blocks)."""
    data = run.manifest.get("order")
    return isinstance(data, dict) and data.get("by") == "blocks"


def of_run(run) -> list:
    """The drift tests of a run (results.run.Run), by part, from its digest; kept in the cache
    beside a cached digest (a campaign's 100,000 values took a warm table 0.15 s each time)."""
    data = run.manifest.get("order")
    every = {r[0]: r[2] for r in data.get("reference", []) if isinstance(r, list) and len(r) == 3} \
        if isinstance(data, dict) and isinstance(data.get("reference"), list) else {}
    inter = interleaved(run)

    def compute() -> list:
        return of_digest(run.digest, inter, every=every)
    from ..results import cache
    from ..results.run import kept_at

    # keyed by iolab's code too: the metric tested comes from the benchmarks' descriptors
    return cache.of_run(kept_at(run), "drift", [inter, sorted(every.items())], compute, list)


def notes(drifts: list) -> list[str]:
    """Lines for a run's notes: the parts that drift, by each test that finds it, and each
    reference test (it says how many reference jobs ran)."""
    return [d.text() for d in drifts if d.drifts or d.test == ReferenceDrift.test]


def floor(drifts: list, part: str):
    """The drift of a part that a difference must exceed to be declared (the larger of the
    tests that find one); None: none measured."""
    found = [d for d in drifts if d.part == part and d.drifts]
    return max(found, key=lambda d: d.size) if found else None
