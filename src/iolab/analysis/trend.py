"""Trends across campaigns: a case's metric over all runs of an experiment, in time order, with
the runs where it changed for good (change points), found by PELT (`ruptures`).

Each run (with its continuations) gives one point per case: the mean of its ok records, at the
time its first record started. Runs of different systems (their manifests' `system`) are
separate series unless asked otherwise. The change points are searched on log(mean), so a step
is a ratio: PELT with the l2 cost and one penalty per change point,
pen = penalty * sigma^2 * ln(n), where sigma is the noise of a run's mean, estimated from the
median of the absolute differences between successive runs (1.4826 * median / sqrt(2): a few
steps barely move it), and never below MIN_SIGMA. A larger penalty finds fewer change points.
`ruptures` is an optional extra (pip install 'iolab[trend]'), imported only here.
"""

from __future__ import annotations

import datetime
import importlib.util
import math
import statistics
from dataclasses import dataclass, field

from .. import stats
from ..errors import IolabError

DEFAULT_PENALTY = 3.0
MIN_SIGMA = 0.01          # a run-to-run noise of 1% is assumed at least (log scale)
MISSING = ("iolab trend needs the change-point library ruptures: pip install 'iolab[trend]' "
           "(ruptures 1.1.10)")


@dataclass(frozen=True)
class Point:
    run_id: str
    time: float             # unix seconds: the run's first record's start
    mean: float
    n: int                  # ok records of the case in the run


@dataclass
class Series:
    system: str
    part: str
    case_id: str
    label: str              # the case's varied parameters, as shown
    metric: str
    unit: str
    points: list[Point]
    changes: list[int] = field(default_factory=list)   # indices of the first point after a change
    sigma: float | None = None

    def segments(self) -> list[list[Point]]:
        bounds = [0, *self.changes, len(self.points)]
        return [self.points[a:b] for a, b in zip(bounds, bounds[1:])]


@dataclass(frozen=True)
class Change:
    series: Series
    at: int                   # index of the first run after the change
    before: list[Point]
    after: list[Point]

    @property
    def ratio(self) -> float:
        return _geomean(self.after) / _geomean(self.before)


def _geomean(points: list[Point]) -> float:
    return math.exp(statistics.fmean(math.log(p.mean) for p in points))


def available() -> bool:
    return importlib.util.find_spec("ruptures") is not None


def noise(logs: list[float]) -> float:
    """The noise of one point, from successive differences (robust to a few steps)."""
    diffs = [abs(b - a) for a, b in zip(logs, logs[1:])]
    if not diffs:
        return MIN_SIGMA
    return max(MIN_SIGMA, 1.4826 * statistics.median(diffs) / math.sqrt(2))


def change_points(logs: list[float], penalty: float = DEFAULT_PENALTY) -> tuple[list[int], float]:
    """Indices where a new level starts (PELT, l2 cost), and the noise used."""
    if not available():
        raise IolabError(MISSING)
    import numpy as np
    import ruptures

    sigma = noise(logs)
    if len(logs) < 3:
        return [], sigma
    signal = np.asarray(logs, dtype=float).reshape(-1, 1)
    pen = penalty * sigma ** 2 * math.log(len(logs))
    ends = ruptures.Pelt(model="l2", min_size=1, jump=1).fit(signal).predict(pen=pen)
    return [e for e in ends if e < len(logs)], sigma


@dataclass(frozen=True)
class SetAside:
    """A value in no run's mean: not finite or above stats.LIMIT, as the tables set it aside."""
    run_id: str
    case_id: str
    repetition: int
    metric: str
    value: float


def series_of(runs, metric: str | None, systems: str | None, all_systems: bool,
              cases: list[str] | None, label_of, aside: list | None = None) -> list[Series]:
    """One series per (system, part, case) over the runs (results.run.Run, oldest first). The
    values the statistics set aside (stats.usable) are in no point; `aside` gets each (SetAside)."""
    from ..results.upgrade import OLD_CASE_ID_DIGITS, names_case

    found: dict[tuple, Series] = {}
    for run in runs:
        system = "all systems" if all_systems else (run.manifest.system or "unknown")
        if systems and run.manifest.system != systems:
            continue
        starts = [s for r in run.records if (s := r.started) is not None]
        if not starts:
            continue
        by_case: dict[tuple, list] = {}
        for rec in run.records:
            if not rec.ok or rec.drift_reference:      # as in the run's table
                continue
            if cases and not any(names_case(c, rec.case_id) for c in cases):
                continue
            name = metric or _first_metric(rec)
            m = rec.metric(name) if name else None
            if m is None or not isinstance(m.value, (int, float)) or not m.value > 0:
                continue
            if not stats.usable(m.value):
                if aside is not None:
                    aside.append(SetAside(run.run_id, rec.case_id, rec.repetition, name, float(m.value)))
                continue
            by_case.setdefault((rec.part, rec.case_id, name, m.unit), []).append((rec, m.value))
        for (part, case_id, name, unit), got in by_case.items():
            key = (system, part, case_id, name)
            if key not in found:
                found[key] = Series(system, part, case_id, label_of(got[0][0]), name, unit or "", [])
            found[key].points.append(Point(run.run_id, min(starts), statistics.fmean(v for _, v in got),
                                           len(got)))
    # runs recorded with old 8-digit case ids: their series joins the 16-digit id's
    merged: dict[tuple, Series] = {}
    longer = {k[2]: k for k in found if len(k[2]) > OLD_CASE_ID_DIGITS}
    for key in sorted(found, key=lambda k: -len(k[2])):
        s = found[key]
        new = next((k for cid, k in longer.items() if cid.startswith(key[2]) and k[0] == key[0]
                    and k[1:] == (key[1], cid, key[3])), key)
        if new in merged:
            merged[new].points += s.points
        else:
            merged[new] = s
    for s in merged.values():
        s.points.sort(key=lambda p: p.time)
    return list(merged.values())


def _first_metric(rec) -> str | None:
    """The benchmark's first table metric that the record reports."""
    from .. import benchmarks

    if rec.benchmark not in benchmarks.registry():
        return rec.metrics[0].name if rec.metrics else None
    have = {m.name for m in rec.metrics}
    return next((n for n in benchmarks.get(rec.benchmark).table_metrics if n in have), None)


def find_changes(series: list[Series], penalty: float = DEFAULT_PENALTY) -> list[Change]:
    out = []
    for s in series:
        s.changes, s.sigma = change_points([math.log(p.mean) for p in s.points], penalty)
        segs = s.segments()
        for i, at in enumerate(s.changes):
            out.append(Change(s, at, segs[i], segs[i + 1]))
    return out


def _date(t: float) -> str:
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M")


def _runs(points: list[Point]) -> str:
    if len(points) <= 2:
        return ", ".join(p.run_id for p in points)
    return f"{points[0].run_id} … {points[-1].run_id} ({len(points)} runs)"


def render(series: list[Series], changes: list[Change], experiment: str, penalty: float,
           better, aside: list[SetAside] = ()) -> str:
    """Markdown: per system and part, the change points, then every series in one line; a line
    per metric naming the values set aside (series_of)."""
    most = max((len(s.points) for s in series), default=0)
    out = [f"## {experiment}: trend over up to {most} runs per case", ""]
    for system in dict.fromkeys(s.system for s in series):
        mine = [s for s in series if s.system == system]
        out += [f"### system {system}", "",
                "| Part | Case | Metric | Changed at run | Date (UTC) | Before: mean (runs) | "
                "After: mean (runs) | After/before | Way |", "|---|---|---|---|---|---|---|---|---|"]
        shown = [c for c in changes if c.series.system == system]
        for c in shown:
            s = c.series
            way = "higher" if c.ratio > 1 else "lower"
            if (b := better(s.metric, s.unit)) is not None:
                way = "faster" if (c.ratio > 1) == (b == "higher") else "slower"
            out.append(f"| {s.part} | {s.case_id} {s.label} | {s.metric} | {s.points[c.at].run_id} | "
                       f"{_date(s.points[c.at].time)} | {_geomean(c.before):.4g} {s.unit} "
                       f"({_runs(c.before)}) | {_geomean(c.after):.4g} {s.unit} ({_runs(c.after)}) | "
                       f"{c.ratio:.2f} | {way} |")
        if not shown:
            out.append("| - | no change point in any case | | | | | | | |")
        out.append("")
        steady = [s for s in mine if not s.changes]
        if steady:
            out.append(f"No change found in {len(steady)} of {len(mine)} series "
                       f"({', '.join(f'{s.part}/{s.case_id}' for s in steady[:6])}"
                       f"{' …' if len(steady) > 6 else ''}).")
        short = [s for s in mine if len(s.points) < 3]
        if short:
            out.append(f"{len(short)} series with fewer than 3 runs: no change point can be found.")
        out.append("")
    for name in dict.fromkeys(a.metric for a in aside):
        mine = [a for a in aside if a.metric == name]
        shown = ", ".join(f"{a.case_id} rep {a.repetition} of run {a.run_id}" for a in mine[:6])
        out += [f"{name}: {stats.set_aside_text([a.value for a in mine])}, in no run's mean: "
                f"{shown}{', …' if len(mine) > 6 else ''}", ""]
    out.append(f"Change points: PELT (ruptures) on log(mean per run), l2 cost, penalty "
               f"{penalty:g} × σ² × ln(runs), σ the run-to-run noise from successive differences "
               f"(at least {MIN_SIGMA:.0%}). A larger --penalty finds fewer changes.")
    out.append("")
    return "\n".join(out)
