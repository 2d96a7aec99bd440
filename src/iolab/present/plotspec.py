"""Which plots a run gets: its axes (the parameters it varies, zip groups and one-to-one
parameters folded into one), the default rules (RULES, first match wins) or the experiment's
`report.plots`, as PlotSpecs that plots.py draws."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .. import stats
from ..layers import registry as layers
from ..results import asrun
from ..results.record import NUM_TASKS, param_value
from ..analysis.report import Table, param_label, tables_from
from ..experiment.reportspec import PlotRequest
from ..units import CELL, shown

# Parameters whose value the system may lower (an MPI library's aggregators): drawn against.
AGGREGATOR_KEYS = layers.axes("effective_axes")


def _where_effective() -> str:
    """Where a record keeps the values in effect of AGGREGATOR_KEYS (their layers' parts)."""
    owners = dict.fromkeys(layers.owner(k) for k in AGGREGATOR_KEYS)
    return ", ".join(f"observed.{layer.observed_keys[0]}.effective" for layer in owners
                     if layer and layer.observed_keys)


# The default choice of plots, in order (default_specs implements them; pages print them).
RULES = (
    "1. the process count varies (scale.nodes or scale.tasks_per_node): the metric against the "
    "number of processes (nodes x tasks per node), one line per combination of the other axes "
    "(the ARCHER figures: one line per stripe setting);",
    f"2. else an aggregator parameter varies ({', '.join(AGGREGATOR_KEYS) or 'none is known'}): "
    "the metric against it, one line per combination of the other axes; where the MPI library "
    f"reported another value ({_where_effective()}), the "
    'point says so ("eff. N") and its request is flagged;',
    "3. else two axes vary: a heatmap of the metric's mean over them;",
    "4. else one axis varies: a line against it (numbers) or bars (anything else);",
    "5. else (three or more axes): bars against the axis with the most values, one bar per "
    "combination of the others.",
)


SCALE_KEYS = ("scale.nodes", "scale.tasks_per_node")


# Of parameters that vary one to one (a zip group), these name the group in legends first.
PREFERRED = ("file_per_process", "io_method", "api", "collective", *layers.axes("preferred_axes"))


_SCALARS = (str, int, float, bool, type(None))


def hashable(value):
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
    return (4, 0.0, hashable(value))


def value_label(key: str, value, benchmark: str) -> str:
    if value is None:
        return "not set"
    special = layers.special_value(key, value)
    if special:
        return special
    return shown(value, CELL, divisor=param_label(key, benchmark)[1])


def short_name(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def log2_axis(values) -> bool:
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
        a, b = hashable(a), hashable(b)
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


def numeric(key: str, values) -> bool:
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
        kind = "line" if axes[0].single and numeric(axes[0].single, [
            param_value(r.params, axes[0].single) for r in table.rows]) else "bar"
        return [PlotSpec(part, kind, axes[0], metric, (), rule="one parameter varies: against it")]
    counts = [len({hashable(a.value(r.params)) for r in table.rows}) for a in axes]
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
    made = asrun.of(run)
    settings = made.report
    overrides = settings.plots
    out, notes = [], []
    for table in tables if tables is not None else tables_from(run.digest, metrics, settings,
                                                                 order=made.matrix_order):
        facts = run.digest.parts[table.part]
        axes = find_axes([r.params for r in table.rows], list(facts.varied), made.zip_groups(table.part))
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
                                                            order=made.matrix_order)
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
