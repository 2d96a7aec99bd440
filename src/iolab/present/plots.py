"""Plots of a run (matplotlib, Agg, PNG and SVG), chosen from the experiment's axes.

An *axis* is what an experiment varies: one parameter, or a zip group (parameters that vary
together, read from the experiment as run; parameters whose values map one to one are folded
into one axis too). The default choice, per part and per table metric, is RULES below, first
match wins (default_specs).

`report.plots` in the experiment replaces these defaults: {kind: line|heatmap, x, y, series,
metric, title}; line: y is a metric; heatmap: y is a second parameter and metric the metric.

Every point is a mean over repetitions with its 95% confidence interval (stats.summarize) as
error bars (none below two repetitions); axes carry units; an x axis of values a power of two
apart spanning a factor of 4 or more (or of any values spanning more than 16) is log2; legends
are titled with the parameters. Points (bars, cells) of cases whose settings were not applied as
requested (the records' flags) are drawn hollow (hatched, marked †) with a legend note. Output
is deterministic: fixed rcParams, a fixed SVG hash salt, no dates in the metadata.
"""

from __future__ import annotations

import importlib.util
import json
import math
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from .. import stats
from ..layers import registry as layers
from ..results.digest import shows_effective
from ..results.record import NUM_TASKS, param_value
from ..analysis.compare import TIME_UNITS
from ..analysis.report import Table, fmt_measure, metric_label, param_label, tables_from
from ..experiment.reportspec import PlotRequest
from ..units import CELL, shown

# The default choice of plots, in order (default_specs implements them; pages print them).
RULES = (
    "1. the process count varies (scale.nodes or scale.tasks_per_node): the metric against the "
    "number of processes (nodes x tasks per node), one line per combination of the other axes "
    "(the ARCHER figures: one line per stripe setting);",
    "2. else an aggregator parameter varies (mpiio.cb_nodes, mpiio.aggregators, "
    "mpiio.aggregators_per_node): the metric against it, one line per combination of the other "
    "axes; where the MPI library reported another value (observed.mpiio_hints.effective), the "
    'point says so ("eff. N") and its request is flagged;',
    "3. else two axes vary: a heatmap of the metric's mean over them;",
    "4. else one axis varies: a line against it (numbers) or bars (anything else);",
    "5. else (three or more axes): bars against the axis with the most values, one bar per "
    "combination of the others.",
)
SCALE_KEYS = ("scale.nodes", "scale.tasks_per_node")
# Parameters whose value the system may lower (an MPI library's aggregators): drawn against.
AGGREGATOR_KEYS = layers.axes("effective_axes")
# Of parameters that vary one to one (a zip group), these name the group in legends first.
PREFERRED = ("file_per_process", "io_method", "api", "collective", *layers.axes("preferred_axes"))
FORMATS = ("png", "svg")
COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
          "#bcbd22", "#17becf")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">")
HOLLOW_NOTE = "hollow: a setting was not applied as requested"
HATCH_NOTE = "hatched: a setting was not applied as requested"
CELL_NOTE = "†: a setting was not applied as requested"
RC = {
    "font.family": "DejaVu Sans",
    "font.size": 10,
    "axes.titlesize": 11,
    "axes.labelsize": 10,
    "legend.fontsize": 8,
    "legend.title_fontsize": 8,
    "figure.dpi": 100,
    "savefig.dpi": 100,
    "svg.fonttype": "none",        # text stays text: labels can be searched and read
    "svg.hashsalt": "iolab",       # fixed ids in the SVG
    "path.simplify": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
}
METADATA = {"png": {"Software": "iolab"}, "svg": {"Date": None, "Creator": "iolab"}}
FIGSIZE = (7.5, 4.6)
MISSING_MATPLOTLIB = "no plots: matplotlib is not installed (pip install 'iolab[plots]')"
# Past these a plot cannot be read: more series are pooled into one mean per x value, more bars
# than MAX_BARS show the first x values only, and a heatmap of more cells prints no numbers in
# them. Each plot's notes (and so the page) say what was pooled or left out; the tables keep all.
MAX_SERIES = 40
MAX_BARS = 200
MAX_CELL_TEXT = 400


# ------------------------------------------------------------------------------------ values

_SCALARS = (str, int, float, bool, type(None))


def _hashable(value):
    """A key for a parameter value, equal only for equal JSON (1, 1.0 and true stay apart)."""
    if type(value) is tuple and all(type(v) in _SCALARS for v in value):
        return tuple((type(v), v) for v in value)    # the common case, without json.dumps
    return json.dumps(value, sort_keys=True)


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _order(key: str, value):
    """Sort key of one parameter value: not set first, numbers ascending, 'all OSTs' last."""
    if value is None:
        return (0, 0.0, "")
    if isinstance(value, bool):
        return (1, float(value), "")
    if _is_number(value):
        if layers.special_value(key, value):
            return (3, 0.0, "")
        return (2, float(value), "")
    return (4, 0.0, _hashable(value))


def value_label(key: str, value, benchmark: str) -> str:
    if value is None:
        return "not set"
    special = layers.special_value(key, value)
    if special:
        return special
    return shown(value, CELL, divisor=param_label(key, benchmark)[1])


def short_name(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def _log2_axis(values) -> bool:
    """Positive values a power of two apart (24, 48, ..., 12288; 1 and 8 MiB) spanning a factor of
    4 or more, or any positive values spanning more than a factor of 16 (1, 2, 8, 24, ..., 192)."""
    if not values or not all(_is_number(v) and v > 0 for v in values):
        return False
    low, span = min(values), max(values) / min(values)
    return (span >= 4 and all(_power_of_two(v / low) for v in values)) or span > 16


def _power_of_two(value) -> bool:
    if not (_is_number(value) and value > 0 and float(value).is_integer()):
        return False
    return (int(value) & (int(value) - 1)) == 0


# -------------------------------------------------------------------------------------- axes

@dataclass(frozen=True)
class Axis:
    """Parameters that vary together (a zip group), or one parameter."""

    keys: tuple[str, ...]
    shown: tuple[str, ...]          # the keys named in titles and labels

    def value(self, params: dict) -> tuple:
        return tuple(param_value(params, k) for k in self.keys)

    def order(self, value: tuple):
        return tuple(_order(k, v) for k, v in zip(self.keys, value))

    def title(self, benchmark: str) -> str:
        if len(self.shown) <= 2:
            return " / ".join(param_label(k, benchmark)[0] for k in self.shown)
        owners = {layers.owner(k) for k in self.shown}
        if len(owners) == 1 and None not in owners and owners.copy().pop().settings_title:
            return owners.pop().settings_title      # one layer's settings: its word for them
        return "Setting (" + ", ".join(short_name(k) for k in self.shown) + ")"

    def label(self, value: tuple, benchmark: str, sep: str = ", ") -> str:
        """The value as shown: 'yes / POSIX'; for three keys or more, the ones set, k=v."""
        pairs = sorted(((k, v) for k, v in zip(self.keys, value) if k in self.shown),
                       key=lambda kv: self.shown.index(kv[0]))
        if len(pairs) <= 2:
            return " / ".join(value_label(k, v, benchmark) for k, v in pairs)
        set_ = [f"{short_name(k)}={value_label(k, v, benchmark)}" for k, v in pairs if v is not None]
        return sep.join(set_) or "none set"

    @property
    def single(self) -> str | None:
        return self.keys[0] if len(self.keys) == 1 else None


def single_axis(key: str) -> Axis:
    return Axis((key,), (key,))


def _bijective(values_a: list, values_b: list) -> bool:
    ab, ba = {}, {}
    for a, b in zip(values_a, values_b):
        a, b = _hashable(a), _hashable(b)
        if ab.setdefault(a, b) != b or ba.setdefault(b, a) != a:
            return False
    return True


def find_axes(params_list: list[dict], varied: list[str], groups: list[set] | None = None) -> list[Axis]:
    """The varied parameters as axes: zip groups and one-to-one parameters merged, in varied order."""
    keys = [k for k in varied if k in {k2 for p in params_list for k2 in p}]
    parent = {k: k for k in keys}

    def root(k):
        while parent[k] != k:
            k = parent[k]
        return k

    def union(a, b):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[rb] = ra
    for group in groups or []:
        members = [k for k in keys if k in group]
        for k in members[1:]:
            union(members[0], k)
    columns = {k: [p.get(k) for p in params_list] for k in keys}
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            if _bijective(columns[a], columns[b]):
                union(a, b)
    axes = []
    for k in keys:
        if root(k) != k:
            continue
        members = tuple(m for m in keys if root(m) == k)
        one_to_one = all(_bijective(columns[members[0]], columns[m]) for m in members[1:])
        if one_to_one and len(members) > 2:
            ranked = sorted(members, key=lambda m: (PREFERRED.index(m) if m in PREFERRED else len(PREFERRED),
                                                    members.index(m)))
            shown = tuple(ranked[:2])
        else:
            shown = members
        axes.append(Axis(members, shown))
    return axes


# ------------------------------------------------------------------------------------- specs

@dataclass(frozen=True)
class PlotSpec:
    part: str
    kind: str                       # line | bar | heatmap
    x: Axis
    metric: str
    series: tuple[Axis, ...] = ()
    y: Axis | None = None           # heatmap: the second parameter
    title: str | None = None
    rule: str = ""                  # why this plot: the default rule or "report.plots"
    fixed: tuple = ()               # heatmap panels: ((axis, value), ...) of the other axes

    @property
    def name(self) -> str:
        def axis_name(axis):
            if len(axis.keys) <= 2:
                return "-".join(axis.keys)
            return f"{axis.keys[0]}-and-{len(axis.keys) - 1}-more"
        bits = [self.part, self.kind, self.metric, "by", axis_name(self.x)]
        if self.y is not None:
            bits += [axis_name(self.y)]
        for axis, value in self.fixed:
            bits += ["-".join(f"{short_name(k)}-{v}" for k, v in zip(axis.keys, value))]
        return re.sub(r"[^A-Za-z0-9_]+", "-", "-".join(bits)).strip("-").lower()


@dataclass
class Point:
    case_id: str
    params: dict
    summary: stats.Summary
    flags: list[str]
    effective: dict = field(default_factory=dict)    # hint parameter -> effective values seen


@dataclass
class Plot:
    spec: PlotSpec
    title: str
    files: dict[str, Path]          # format -> path
    notes: list[str]
    xlabel: str
    ylabel: str


def _numeric(key: str, values) -> bool:
    return bool(values) and all(_is_number(v) and v > 0 for v in values) and key != "case"


def _scale_varies(varied: list[str]) -> bool:
    return any(k in varied for k in SCALE_KEYS)


def default_specs(table: Table, axes: list[Axis], metric: str) -> list[PlotSpec]:
    """The default plot of one part and metric (rules in the module docstring)."""
    part, varied = table.part, [k for a in axes for k in a.keys]
    if not axes:
        return []
    if _scale_varies(varied):
        others = tuple(a for a in axes if not set(a.keys) & set(SCALE_KEYS))
        return [PlotSpec(part, "line", single_axis(NUM_TASKS), metric, others,
                         rule="the process count varies: against the number of processes")]
    for key in AGGREGATOR_KEYS:
        if key in varied:
            others = tuple(a for a in axes if key not in a.keys)
            return [PlotSpec(part, "line", single_axis(key), metric, others,
                             rule=f"{key} varies: against the aggregators")]
    if len(axes) == 2:
        return [PlotSpec(part, "heatmap", axes[0], metric, (), y=axes[1],
                         rule="two parameters vary: a heatmap of the mean")]
    if len(axes) == 1:
        kind = "line" if axes[0].single and _numeric(axes[0].single, [
            param_value(r.params, axes[0].single) for r in table.rows]) else "bar"
        return [PlotSpec(part, kind, axes[0], metric, (), rule="one parameter varies: against it")]
    counts = [len({_hashable(a.value(r.params)) for r in table.rows}) for a in axes]
    x = axes[counts.index(max(counts))]
    return [PlotSpec(part, "bar", x, metric, tuple(a for a in axes if a is not x),
                     rule="several parameters vary: bars against the one with the most values")]


def override_specs(item: PlotRequest, table: Table, axes: list[Axis], metrics: list[str],
                   present: set) -> tuple[list[PlotSpec], str | None]:
    """A `report.plots` entry applied to one part: (specs, or the reason it does not apply)."""
    kind = item.kind
    x_key = item.x
    varied = [k for a in axes for k in a.keys]

    def varies(key):
        return key in varied or (key == NUM_TASKS and _scale_varies(varied))
    if not varies(x_key):
        return [], f"{x_key} does not vary in part {table.part}"
    if kind == "heatmap":
        y_key = item.y
        if not varies(y_key):
            return [], f"{y_key} does not vary in part {table.part}"
        metric = item.metric or (metrics[0] if metrics else None)
        if metric is None:
            return [], f"part {table.part} has no metric to show"
        used = {x_key, y_key}
    else:
        metric = item.y
        used = {x_key}
    if metric not in present:
        return [], f"part {table.part} has no metric {metric!r}"
    if NUM_TASKS in used:
        used |= set(SCALE_KEYS)
    rest = []
    for a in axes:
        keys = tuple(k for k in a.keys if k not in used)
        if keys:
            rest.append(Axis(keys, tuple(k for k in a.shown if k in keys) or keys))
    title = item.title
    if kind == "heatmap":
        x, y = single_axis(x_key), single_axis(item.y)
        return _heatmap_panels(table, x, y, metric, rest, title, "report.plots"), None
    series = []
    if item.series:
        s_key = item.series
        if not varies(s_key):
            return [], f"{s_key} does not vary in part {table.part}"
        series.append(single_axis(s_key))
        rest = [Axis(tuple(k for k in a.keys if k != s_key), tuple(k for k in a.shown if k != s_key)
                     or tuple(k for k in a.keys if k != s_key)) for a in rest]
        rest = [a for a in rest if a.keys]
    series += rest
    return [PlotSpec(table.part, "line", single_axis(x_key), metric, tuple(series), title=title,
                     rule="report.plots")], None


def _heatmap_panels(table, x, y, metric, rest, title, rule) -> list[PlotSpec]:
    """One heatmap per combination of the axes that are neither x nor y (usually one)."""
    if not rest:
        return [PlotSpec(table.part, "heatmap", x, metric, (), y=y, title=title, rule=rule)]
    combos = []
    for r in table.rows:
        combo = tuple((a, a.value(r.params)) for a in rest)
        if combo not in combos:
            combos.append(combo)
    return [PlotSpec(table.part, "heatmap", x, metric, (), y=y, title=title, rule=rule, fixed=c)
            for c in combos]


def choose(run, metrics: list[str] | None = None,
           tables: list[Table] | None = None) -> tuple[list[tuple[Table, PlotSpec]], list[str]]:
    """Plot specs for a run (run.Run): the experiment's report.plots, else the defaults.
    `tables`: the run's tables of `metrics` when the caller has built them already.

    Returns (table, spec) pairs and notes on plots that could not be drawn.
    """
    settings = run.report
    overrides = settings.plots
    out, notes = [], []
    for table in tables if tables is not None else tables_from(run.digest, metrics, settings,
                                                                 order=run.matrix_order):
        facts = run.digest.parts[table.part]
        axes = find_axes([r.params for r in table.rows], list(facts.varied), run.zip_groups(table.part))
        present = facts.present
        if overrides:
            for i, item in enumerate(overrides):
                specs, why = override_specs(item, table, axes, table.metrics, present)
                if why:
                    notes.append(f"report.plots[{i}] ({item.kind} of {item.x}): {why}")
                for spec in specs:
                    shown = table
                    if spec.metric not in table.metrics:     # a metric the tables do not show
                        shown = next(t for t in tables_from(run.digest, [spec.metric], settings,
                                                            order=run.matrix_order)
                                     if t.part == table.part)
                    out.append((shown, spec))
            continue
        if not axes:
            notes.append(f"part {table.part}: nothing varies, no plot (see the table)")
            continue
        for metric in table.metrics:
            if metric not in present:
                continue
            for spec in default_specs(table, axes, metric):
                if spec.kind == "heatmap":
                    out += [(table, s) for s in _heatmap_panels(table, spec.x, spec.y, metric, [],
                                                                   None, spec.rule)]
                else:
                    out.append((table, spec))
    return out, notes


# ---------------------------------------------------------------------------------- drawing

def points(table: Table, metric: str, run, keys=()) -> list[Point]:
    """One point per case with values of `metric`; for keys whose layer reports it (mpiio.*),
    the values in effect."""
    hints = [k for k in keys if k and shows_effective(k)]
    out = []
    for row in table.rows:
        cell = row.cells.get(metric)
        if cell is None or not cell.values:
            continue
        eff: dict[str, list] = {}
        # records are decoded only for the values in effect: a plot of a campaign without
        # MPI-IO axes is drawn from the table (its digest) alone
        for rec in run.by_case.get((table.part, row.case_id), ()) if hints else ():
            if not rec.ok:
                continue
            for key in hints:
                value = rec.observed.effective(key)
                if value is not None and value not in eff.setdefault(key, []):
                    eff[key].append(value)
        out.append(Point(row.case_id, row.params, cell.summary, list(row.notes), eff))
    return out


def _lowered(p: Point, key: str | None) -> list:
    """Effective values of a hint parameter other than the one requested."""
    if not key:
        return []
    want = param_value(p.params, key)
    return [e for e in p.effective.get(key, []) if e != want]


def _figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _ylabel(metric: str, unit: str) -> str:
    return f"{metric_label(metric)} ({unit})" if unit else metric_label(metric)


def _title(spec: PlotSpec, table: Table, xlabel: str, ylabel: str) -> str:
    if spec.title:
        return spec.title
    what = metric_label(spec.metric)
    if spec.kind == "heatmap":
        text = f"Mean {what}: {spec.y.title(table.benchmark)} x {xlabel}"
    else:
        text = f"{what} against {xlabel}"
    if spec.fixed:
        text += " (" + "; ".join(f"{a.title(table.benchmark)} = {a.label(v, table.benchmark)}"
                                 for a, v in spec.fixed) + ")"
    return f"{table.part}: {text}" if table.part != "main" else text


def _series_groups(pts: list[Point], series: tuple[Axis, ...]) -> dict[tuple, list[Point]]:
    groups: dict[tuple, list[Point]] = {}
    for p in pts:
        groups.setdefault(tuple(a.value(p.params) for a in series), []).append(p)
    return groups


def _pool_series(pts: list[Point], x: Axis) -> list[Point]:
    """One point per x value pooling the repetitions of every case there (for too many series)."""
    groups: dict = {}
    for p in pts:
        groups.setdefault(_hashable(x.value(p.params)), []).append(p)
    out = []
    for gpts in groups.values():
        effective: dict[str, list] = {}
        for p in gpts:
            for key, values in p.effective.items():
                effective.setdefault(key, []).extend(v for v in values if v not in effective[key])
        out.append(Point(f"{len(gpts)} cases", gpts[0].params,
                         stats.summarize([v for p in gpts for v in p.summary.values]),
                         list(dict.fromkeys(f for p in gpts for f in p.flags)), effective))
    return out


def _at_scale(pts: list[Point], spec: PlotSpec, series: tuple[Axis, ...], benchmark: str,
              notes: list[str]) -> tuple[list[Point], tuple[Axis, ...]]:
    """Points a reader can tell apart: too many series pooled, too many bars cut, said in notes."""
    if spec.kind == "heatmap":
        return pts, series
    count = len(_series_groups(pts, series))
    if count > MAX_SERIES:
        notes.append(f"{count} series ({_legend_title(series, benchmark)}) are more than {MAX_SERIES} "
                     f"a plot can tell apart: each point pools the repetitions of every case at its "
                     f"x value (mean and interval over them); the tables show each case")
        pts, series = _pool_series(pts, spec.x), ()
    if spec.kind == "bar" and len(pts) > MAX_BARS:
        values = sorted({_hashable(spec.x.value(p.params)): spec.x.value(p.params) for p in pts}.values(),
                        key=spec.x.order)
        per_x = max(1, len(_series_groups(pts, series)))
        kept_values = values[:max(1, MAX_BARS // per_x)]
        kept = {_hashable(v) for v in kept_values}
        shown = [p for p in pts if _hashable(spec.x.value(p.params)) in kept]
        notes.append(f"{len(pts)} bars are more than {MAX_BARS} a plot can show: the first "
                     f"{len(kept_values)} of {len(values)} values of {spec.x.title(benchmark)} are drawn "
                     f"({len(shown)} bars); the tables show every case")
        pts = shown
    return pts, series


def _series_label(series: tuple[Axis, ...], key: tuple, benchmark: str) -> str:
    return " / ".join(a.label(v, benchmark) for a, v in zip(series, key)) or "all cases"


def _legend_title(series: tuple[Axis, ...], benchmark: str) -> str | None:
    return " / ".join(a.title(benchmark) for a in series) or None


def _unique_series(pts: list[Point], x: Axis, series: tuple[Axis, ...],
                   varied: list[str]) -> tuple[Axis, ...]:
    """Add the node count to the series when the process count alone does not tell cases apart."""
    seen = set()
    for p in pts:
        k = _hashable([x.value(p.params)] + [a.value(p.params) for a in series])
        if k in seen:
            extra = tuple(single_axis(k2) for k2 in SCALE_KEYS
                          if k2 in varied and not any(k2 in a.keys for a in series))
            return series + extra[:1]
        seen.add(k)
    return series


def _x_positions(x: Axis, pts: list[Point], benchmark: str):
    """(position of each x value, tick positions, tick labels, log2?, numeric?)."""
    key = x.single
    values = sorted({_hashable(x.value(p.params)): x.value(p.params) for p in pts}.values(), key=x.order)
    if key and _numeric(key, [v[0] for v in values]):
        divisor = param_label(key, benchmark)[1] or 1
        pos = {_hashable(v): v[0] / divisor for v in values}
        log2 = _log2_axis([v[0] for v in values])
        ticks = [pos[_hashable(v)] for v in values]
        return pos, ticks, [x.label(v, benchmark) for v in values], log2, True
    pos = {_hashable(v): float(i) for i, v in enumerate(values)}
    return pos, list(pos.values()), [x.label(v, benchmark, "\n") for v in values], False, False


def _half(p: Point) -> float:
    return p.summary.ci_half_width or 0.0


CLIP_NOTE = ("error bars clipped at 0: the interval reaches below 0, where a bandwidth, rate or "
             "time cannot be (the tables give it whole)")


def cannot_be_negative(unit: str | None) -> bool:
    """Bandwidths and rates (…/s), times and byte counts are never below 0."""
    return bool(unit) and (unit.endswith("/s") or unit in TIME_UNITS or unit == "B")


def _yerr(pts: list[Point], unit: str | None, notes: list[str]) -> list[list[float]]:
    """Error bars [below, above] the means: the 95% interval, its lower end clipped at 0 for a
    quantity that cannot be negative (said in the plot's notes)."""
    above = [_half(p) for p in pts]
    if not cannot_be_negative(unit):
        return [above, above]
    below = [min(h, max(p.summary.mean, 0.0)) for h, p in zip(above, pts)]
    if below != above and CLIP_NOTE not in notes:
        notes.append(CLIP_NOTE)
    return [below, above]


def _draw_lines(ax, spec, table, pts, series, notes):
    from matplotlib.lines import Line2D

    bench = table.benchmark
    pos, ticks, labels, log2, numeric = _x_positions(spec.x, pts, bench)
    groups = _series_groups(pts, series)
    handles, any_flag, lowered = [], False, []
    for i, (skey, gpts) in enumerate(groups.items()):
        color, marker = COLORS[i % len(COLORS)], MARKERS[i % len(MARKERS)]
        gpts = sorted(gpts, key=lambda p: spec.x.order(spec.x.value(p.params)))
        xs = [pos[_hashable(spec.x.value(p.params))] for p in gpts]
        ys = [p.summary.mean for p in gpts]
        label = _series_label(series, skey, bench)
        ax.plot(xs, ys, color=color, linewidth=1.5, zorder=2, gid=f"series-{i}")
        eb = ax.errorbar(xs, ys, yerr=_yerr(gpts, table.units.get(spec.metric), notes), fmt="none",
                         ecolor=color, elinewidth=1.2, capsize=4, capthick=1.2, zorder=2)
        for barlines in eb.lines[2]:
            barlines.set_gid(f"errorbar-{i}")
        ok = [(xv, yv) for xv, yv, p in zip(xs, ys, gpts) if not p.flags]
        bad = [(xv, yv) for xv, yv, p in zip(xs, ys, gpts) if p.flags]
        if ok:
            ax.plot(*zip(*ok), linestyle="none", marker=marker, markersize=7, color=color, zorder=3)
        if bad:
            any_flag = True
            ax.plot(*zip(*bad), linestyle="none", marker=marker, markersize=8, markerfacecolor="white",
                    markeredgecolor=color, markeredgewidth=1.6, zorder=3, gid=f"not-applied-{i}")
        if series:
            handles.append(Line2D([], [], color=color, marker=marker, markersize=6, label=label))
        requested = spec.x.single
        for xv, yv, p in zip(xs, ys, gpts):
            want = param_value(p.params, requested) if requested else None
            other = _lowered(p, requested)
            if other:
                text = "eff. " + "/".join(str(e) for e in other)
                ax.annotate(text, (xv, yv), textcoords="offset points", xytext=(0, -15), fontsize=7,
                            ha="center", color=color, gid="effective-annotation")
                lowered.append(f"{requested} {want}: effective {'/'.join(map(str, other))}")
    if log2:
        ax.set_xscale("log", base=2)
    ax.set_xticks(ticks, labels)
    ax.minorticks_off()
    if not numeric:
        ax.set_xlim(-0.5, len(ticks) - 0.5)
    else:
        ax.margins(x=0.06)
    if any_flag:
        handles.append(Line2D([], [], linestyle="none", marker="o", markersize=7, markerfacecolor="white",
                              markeredgecolor="#444444", label=HOLLOW_NOTE))
        notes.append(HOLLOW_NOTE + " (see Requested vs applied)")
    if lowered:
        notes.append("the MPI library used another value than requested (annotated 'eff.'): "
                     + "; ".join(dict.fromkeys(lowered)))
    return handles


def _draw_bars(ax, spec, table, pts, series, notes):
    from matplotlib.patches import Patch

    bench = table.benchmark
    pos, ticks, labels, _log2, _numeric_x = _x_positions(spec.x, pts, bench)
    # bars always sit on categories
    order = {k: float(i) for i, k in enumerate(sorted(pos, key=lambda k: pos[k]))}
    groups = _series_groups(pts, series)
    width = 0.8 / max(1, len(groups))
    handles, any_flag = [], False
    for i, (skey, gpts) in enumerate(groups.items()):
        color = COLORS[i % len(COLORS)]
        offset = (i - (len(groups) - 1) / 2) * width
        xs = [order[_hashable(spec.x.value(p.params))] + offset for p in gpts]
        bars = ax.bar(xs, [p.summary.mean for p in gpts], width=width * 0.95, color=color,
                      edgecolor=color, zorder=2, gid=f"series-{i}")
        for bar, p in zip(bars, gpts):
            if p.flags:
                any_flag = True
                bar.set_facecolor("white")
                bar.set_hatch("///")
        eb = ax.errorbar(xs, [p.summary.mean for p in gpts], fmt="none",
                         yerr=_yerr(gpts, table.units.get(spec.metric), notes),
                         ecolor="black", elinewidth=1.1, capsize=4, capthick=1.1, zorder=3)
        for barlines in eb.lines[2]:
            barlines.set_gid(f"errorbar-{i}")
        handles.append(Patch(facecolor=color, edgecolor=color, label=_series_label(series, skey, bench)))
    ax.set_xticks(list(order.values()), [labels[ticks.index(pos[k])] for k in order])
    ax.set_xlim(-0.6, len(order) - 0.4)
    if all("\n" not in lb for lb in labels) and max(map(len, labels)) > 14 and len(labels) > 3:
        for tick in ax.get_xticklabels():
            tick.set_rotation(20)
            tick.set_horizontalalignment("right")
    if any_flag:
        handles.append(Patch(facecolor="white", edgecolor="#444444", hatch="///", label=HATCH_NOTE))
        notes.append(HATCH_NOTE + " (see Requested vs applied)")
    return handles if series or any_flag else []


def _draw_heatmap(fig, ax, spec, table, pts, unit, notes):
    import numpy as np

    bench = table.benchmark
    xs = sorted({_hashable(spec.x.value(p.params)): spec.x.value(p.params) for p in pts}.values(),
                key=spec.x.order)
    ys = sorted({_hashable(spec.y.value(p.params)): spec.y.value(p.params) for p in pts}.values(),
                key=spec.y.order)
    xi = {_hashable(v): i for i, v in enumerate(xs)}
    yi = {_hashable(v): i for i, v in enumerate(ys)}
    grid = np.full((len(ys), len(xs)), np.nan)
    cells: dict[tuple[int, int], list[Point]] = {}
    for p in pts:
        cells.setdefault((yi[_hashable(spec.y.value(p.params))], xi[_hashable(spec.x.value(p.params))]),
                         []).append(p)
    pooled = False
    for (r, c), cps in cells.items():
        values = [v for p in cps for v in p.summary.values]
        pooled = pooled or len(cps) > 1
        grid[r, c] = stats.summarize(values).mean
    image = ax.imshow(np.ma.masked_invalid(grid), cmap="viridis", aspect="auto", origin="lower")
    finite = grid[np.isfinite(grid)]
    middle = (finite.min() + finite.max()) / 2 if finite.size else 0
    any_flag, lowered = False, []
    if len(cells) > MAX_CELL_TEXT:
        flagged = sum(any(p.flags for p in cps) for cps in cells.values())
        notes.append(f"{len(cells)} cells are more than {MAX_CELL_TEXT} to print numbers in: "
                     "the colour shows each cell's mean; the tables show the values"
                     + (f" ({flagged} cells with a setting not applied as requested: see Requested "
                        "vs applied)" if flagged else ""))
    for (r, c), cps in cells.items() if len(cells) <= MAX_CELL_TEXT else ():
        s = stats.summarize([v for p in cps for v in p.summary.values])
        text = fmt_measure(s.mean)
        if s.ci_half_width is not None:
            text += f"\n± {fmt_measure(s.ci_half_width)}"
        if any(p.flags for p in cps):
            any_flag = True
            text += " †"
        for axis in (spec.x, spec.y):
            other = sorted({str(e) for p in cps for e in _lowered(p, axis.single)})
            if other:
                text += f"\neff. {'/'.join(other)}"
                lowered.append(f"{axis.single} {axis.label(axis.value(cps[0].params), bench)}: "
                               f"effective {'/'.join(other)}")
        ax.text(c, r, text, ha="center", va="center", fontsize=8, gid="cell-value",
                color="white" if grid[r, c] < middle else "black")
    ax.set_xticks(range(len(xs)), [spec.x.label(v, bench) for v in xs])
    ax.set_yticks(range(len(ys)), [spec.y.label(v, bench) for v in ys])
    ax.grid(False)
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("Mean " + _ylabel(spec.metric, unit))
    notes.append("cells: mean ± half-width of the 95% confidence interval")
    if pooled:
        notes.append("some cells pool several cases (parameters not on the axes vary)")
    if any_flag:
        notes.append(CELL_NOTE + " (see Requested vs applied)")
    if lowered:
        notes.append("the MPI library used another value than requested (marked 'eff.'): "
                     + "; ".join(dict.fromkeys(lowered)))


def render_plot(table: Table, spec: PlotSpec, run, out_dir: Path, prefix: str = "",
                formats=FORMATS) -> Plot | None:
    """Draw one plot into out_dir/<prefix><name>.{png,svg}; None when there is nothing to draw."""
    import matplotlib as mpl

    pts = points(table, spec.metric, run, (spec.x.single, spec.y.single if spec.y else None))
    for axis, value in spec.fixed:
        pts = [p for p in pts if axis.value(p.params) == value]
    if not pts:
        return None
    bench = table.benchmark
    unit = table.units.get(spec.metric, "")
    facts = run.digest.parts.get(table.part)
    varied = list(facts.varied) if facts is not None else []
    series = _unique_series(pts, spec.x, spec.series, varied) if spec.kind != "heatmap" else ()
    notes: list[str] = []
    pts, series = _at_scale(pts, spec, series, bench, notes)
    xlabel = spec.x.title(bench)
    if any(p.effective.get(spec.x.single) for p in pts):
        xlabel += " (requested)"
    ylabel = _ylabel(spec.metric, unit) if spec.kind != "heatmap" else spec.y.title(bench)
    if spec.y is not None and any(p.effective.get(spec.y.single) for p in pts):
        ylabel += " (requested)"
    width, height = FIGSIZE
    lines = max(spec.x.label(spec.x.value(p.params), bench, "\n").count("\n") for p in pts)
    height += 0.16 * lines
    count = len(_series_groups(pts, series)) if spec.kind != "heatmap" else 0
    outside = count > 3
    if outside:
        width += 2.4
        height = max(height, 1.2 + 0.17 * count)    # room for the legend's entries (up to MAX_SERIES)
    with mpl.rc_context(RC):
        fig = _figure(width, height)
        ax = fig.add_subplot()
        if spec.kind == "heatmap":
            _draw_heatmap(fig, ax, spec, table, pts, unit, notes)
            handles = []
        elif spec.kind == "bar":
            handles = _draw_bars(ax, spec, table, pts, series, notes)
        else:
            handles = _draw_lines(ax, spec, table, pts, series, notes)
        if spec.kind != "heatmap":
            low = min(p.summary.mean - _half(p) for p in pts)
            if low >= 0 or cannot_be_negative(unit):
                ax.set_ylim(bottom=0)
            if any(p.summary.n < 2 for p in pts):
                notes.append("no error bar: fewer than 2 repetitions (n too small)")
            notes.insert(0, "error bars: 95% confidence interval of the mean (Student t)")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        title = _title(spec, table, xlabel, ylabel)
        ax.set_title(textwrap.fill(title, 90 if outside else 75))
        if handles:
            where = {"loc": "upper left", "bbox_to_anchor": (1.02, 1.0)} if outside else {"loc": "best"}
            legend = ax.legend(handles=handles, title=_legend_title(series, bench), frameon=True, **where)
            legend.set_gid("legend")
        files = _save(fig, out_dir, f"{prefix}{spec.name}", formats)
    return Plot(spec, title, files, notes, xlabel, ylabel)


def _save(fig, out_dir: Path, name: str, formats) -> dict[str, Path]:
    """The figure as out_dir/<name>.<fmt> for each format: {format: path}."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {}
    for fmt in formats:
        path = out_dir / f"{name}.{fmt}"
        fig.savefig(path, format=fmt, metadata=METADATA[fmt])
        files[fmt] = path
    return files


def make_plots(run, out_dir: Path, metrics: list[str] | None = None,
               prefix: str = "", tables: list[Table] | None = None) -> tuple[list[Plot], list[str]]:
    """Every plot of a run (run.Run): (plots, notes on plots that were not drawn). `tables`: the
    run's tables of `metrics`, when the caller has them (a page: built once for both)."""
    if importlib.util.find_spec("matplotlib") is None:
        return [], [MISSING_MATPLOTLIB]
    chosen, notes = choose(run, metrics, tables)
    plots = []
    seen = set()
    for table, spec in chosen:
        if spec.name in seen:
            continue
        seen.add(spec.name)
        plot = render_plot(table, spec, run, out_dir, prefix)
        if plot is None:
            notes.append(f"{spec.name}: no successful repetitions to plot")
        else:
            plots.append(plot)
    return plots, notes


# --------------------------------------------------------------------------- search progress

SEARCH_PLOT = "search-progress"
# the SVG groups of the progress plot (tests and readers find the points by them)
SEARCH_GIDS = {"on_grid": "search-on-grid", "lowered": "search-lowered",
               "off_grid": "search-off-grid", "no_value": "search-no-value",
               "set_aside": "search-set-aside", "best": "search-best",
               "again": "search-again", "best_ci": "search-best-ci"}


@dataclass
class ProgressPlot:
    title: str
    files: dict[str, Path]          # format -> path
    notes: list[str]
    xlabel: str
    ylabel: str


def search_progress_plot(steps, objective: str, unit: str, maximize: bool, out_dir: Path,
                         prefix: str = "", formats=FORMATS) -> ProgressPlot | None:
    """The objective of each job of a search (search.search_progress) against the jobs spent,
    with the best mean so far and its 95% interval (shaded); jobs that measured a case again to
    separate the best (repetitions beyond those asked for) ringed, jobs whose value counts as
    no case of the grid (striping not applied) drawn apart, jobs without a value marked on the
    x axis, rounds as dotted lines. None when matplotlib is missing or there is no job."""
    if importlib.util.find_spec("matplotlib") is None or not steps:
        return None
    import matplotlib as mpl

    unit = unit.strip()
    groups = {
        "on_grid": [s for s in steps if s.on_grid and not s.lowered],
        "lowered": [s for s in steps if s.lowered],
        "off_grid": [s for s in steps if s.value is not None and not s.on_grid],
        "no_value": [s for s in steps if s.value is None and s.set_aside is None],
        "set_aside": [s for s in steps if s.set_aside is not None],
    }
    xlabel = "Jobs spent, in the order the search ran them (one case, one repetition each)"
    ylabel = _ylabel(objective, unit)
    title = f"Search progress: {metric_label(objective)} of each job ({'max' if maximize else 'min'})"
    notes = ["points: each job's value as recorded, counted as the setting that was in effect",
             "line: the best mean on the grid so far (the answer at that point); shaded: its 95% "
             "interval"]
    with mpl.rc_context(RC):
        fig = _figure(*FIGSIZE)
        ax = fig.add_subplot()
        styles = {
            "on_grid": dict(marker="o", color=COLORS[0], label="a case of the grid, as asked"),
            "lowered": dict(marker="D", color=COLORS[1], label="a hint lowered: counted as the case "
                            "in effect"),
            "off_grid": dict(marker="s", color="#7f7f7f", markerfacecolor="none",
                             label="striping not applied: no case of the grid (not counted)"),
        }
        for name, style in styles.items():
            if groups[name]:
                (line,) = ax.plot([s.index for s in groups[name]], [s.value for s in groups[name]],
                                  linestyle="none", markersize=5, **style)
                line.set_gid(SEARCH_GIDS[name])
        if groups["no_value"]:
            (line,) = ax.plot([s.index for s in groups["no_value"]], [0.0] * len(groups["no_value"]),
                              linestyle="none", marker="x", color=COLORS[3], markersize=6,
                              transform=ax.get_xaxis_transform(), clip_on=False,
                              label="no value (failed or skipped)")
            line.set_gid(SEARCH_GIDS["no_value"])
        if groups["set_aside"]:
            (line,) = ax.plot([s.index for s in groups["set_aside"]], [0.0] * len(groups["set_aside"]),
                              linestyle="none", marker="^", color=COLORS[3], markersize=6,
                              markerfacecolor="none", transform=ax.get_xaxis_transform(),
                              clip_on=False, label="value set aside (in no mean)")
            line.set_gid(SEARCH_GIDS["set_aside"])
            notes.append(f"{objective}: {stats.set_aside_text([s.set_aside for s in groups['set_aside']])}"
                         ", marked on the x axis: "
                         + ", ".join(f"job {s.index} ({s.record.case_id} rep {s.record.repetition})"
                                     for s in groups["set_aside"][:6])
                         + (", …" if len(groups["set_aside"]) > 6 else ""))
        again = [s for s in steps if s.again and s.value is not None and s.on_grid]
        if again:
            (line,) = ax.plot([s.index for s in again], [s.value for s in again], linestyle="none",
                              marker="o", markersize=9, markerfacecolor="none", color="#000000",
                              markeredgewidth=0.8, label="measured again to separate the best")
            line.set_gid(SEARCH_GIDS["again"])
            notes.append(f"{len(again)} job(s) measured a case again (beyond the repetitions asked "
                         "for) because its interval overlapped the best's")
        band = [(s.index, *s.best_ci) for s in steps if s.best_ci is not None]
        if band and all(s.value >= 0 for s in steps if s.value is not None) and \
                min(lo for _, lo, _ in band) < 0:
            band = [(x, max(0.0, lo), hi) for x, lo, hi in band]
            notes.append("the shaded interval is clipped at 0 where its lower end is below it")
        if band:
            fill = ax.fill_between([x for x, *_ in band], [lo for _, lo, _ in band],
                                   [hi for *_, hi in band], step="post", color="#000000",
                                   alpha=0.12, linewidth=0, label="95% interval of the best mean")
            fill.set_gid(SEARCH_GIDS["best_ci"])
        best = [(s.index, s.best) for s in steps if s.best is not None]
        if best:
            (line,) = ax.plot([x for x, _ in best], [y for _, y in best], drawstyle="steps-post",
                              color="#000000", linewidth=1.2, label="best mean so far")
            line.set_gid(SEARCH_GIDS["best"])
        rounds = sorted({s.round for s in steps})
        for r in rounds[1:]:
            first = min(s.index for s in steps if s.round == r)
            ax.axvline(first - 0.5, color="#999999", linestyle=":", linewidth=0.8)
        if len(rounds) > 1:
            notes.append(f"dotted lines: the {len(rounds)} rounds (runs of the search)")
        if groups["lowered"]:
            notes.append(f"{len(groups['lowered'])} job(s) counted as another case than asked for "
                         "(the MPI library lowered a hint)")
        if groups["off_grid"]:
            notes.append(f"{len(groups['off_grid'])} job(s) whose striping was not applied: shown "
                         "apart, counted as no case, never the answer")
        if groups["no_value"]:
            notes.append(f"{len(groups['no_value'])} job(s) without a value (x on the axis)")
        values = [s.value for s in steps if s.value is not None]
        if values and min(values) >= 0:
            ax.set_ylim(bottom=0)
        ax.set_xlim(0.5, len(steps) + 0.5)
        ax.xaxis.get_major_locator().set_params(integer=True)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(textwrap.fill(title, 75))
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="best", frameon=True).set_gid("legend")
        files = _save(fig, out_dir, f"{prefix}{SEARCH_PLOT}", formats)
    return ProgressPlot(title, files, notes, xlabel, ylabel)


def trend_plot(series, out_dir: Path, name: str = "trend", formats=FORMATS) -> dict[str, Path] | None:
    """Each series of `iolab trend` (analysis/trend.Series) over its runs' dates, one panel per
    system and metric: the mean per run as points, each level between change points as a line,
    a change point as a dotted vertical line. None when matplotlib is missing or nothing to draw."""
    if importlib.util.find_spec("matplotlib") is None or not any(s.points for s in series):
        return None
    import datetime as dt

    import matplotlib as mpl

    panels = list(dict.fromkeys((s.system, s.metric, s.unit) for s in series if s.points))
    with mpl.rc_context(RC):
        fig = _figure(FIGSIZE[0], FIGSIZE[1] * len(panels))
        for k, (system, metric, unit) in enumerate(panels):
            ax = fig.add_subplot(len(panels), 1, k + 1)
            mine = [s for s in series if (s.system, s.metric, s.unit) == (system, metric, unit)]
            for i, s in enumerate(mine[:len(COLORS)]):
                color = COLORS[i % len(COLORS)]
                when = [dt.datetime.fromtimestamp(p.time, dt.timezone.utc) for p in s.points]
                ax.plot(when, [p.mean for p in s.points], linestyle="none", marker=MARKERS[i % len(MARKERS)],
                        color=color, label=f"{s.part}/{s.case_id} {s.label}".strip())
                start = 0
                for seg in s.segments():
                    level = math.exp(sum(math.log(p.mean) for p in seg) / len(seg))
                    ax.plot(when[start:start + len(seg)], [level] * len(seg), color=color, linewidth=1)
                    start += len(seg)
                for at in s.changes:
                    ax.axvline(when[at], color=color, linestyle=":", linewidth=0.8)
            ax.set_ylabel(_ylabel(metric, unit))
            ax.set_title(textwrap.fill(f"{metric_label(metric)} per run, system {system} "
                                       "(dotted: a change point)", 75))
            ax.legend(loc="best", frameon=True, fontsize=7)
            fig.autofmt_xdate()
        return _save(fig, out_dir, name, formats)


def describe_rules() -> list[str]:
    """The default rules, one string each, for pages."""
    return list(RULES)


__all__ = ["AGGREGATOR_KEYS", "Axis", "Plot", "PlotSpec", "Point", "ProgressPlot", "choose",
           "default_specs", "find_axes", "make_plots", "points", "render_plot",
           "search_progress_plot", "trend_plot"]
