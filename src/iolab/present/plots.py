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
import textwrap
from pathlib import Path

from .. import stats
from ..results.digest import shows_effective
from ..results.record import param_value
from ..results.run import derived
from ..analysis.compare import TIME_UNITS
from ..analysis.report import Table, fmt_measure, metric_label, param_label
from .plotspec import (RULES, SCALE_KEYS, Axis, Plot, PlotSpec, Point, choose, hashable, log2_axis,
                       numeric, single_axis)

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


# -------------------------------------------------------------------------------------- axes


# ------------------------------------------------------------------------------------- specs


def records_by_case(run) -> dict[tuple[str, str], list]:
    """A run's records by (part, case_id), in file order (kept with the run: derived)."""
    out: dict[tuple[str, str], list] = {}
    for rec in run.records:
        out.setdefault((rec.part, rec.case_id), []).append(rec)
    return out


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
        for rec in derived(run, records_by_case).get((table.part, row.case_id), ()) if hints else ():
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


def new_figure(width: float, height: float):
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def axis_label(metric: str, unit: str) -> str:
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
        groups.setdefault(hashable(x.value(p.params)), []).append(p)
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
        values = sorted({hashable(spec.x.value(p.params)): spec.x.value(p.params) for p in pts}.values(),
                        key=spec.x.order)
        per_x = max(1, len(_series_groups(pts, series)))
        kept_values = values[:max(1, MAX_BARS // per_x)]
        kept = {hashable(v) for v in kept_values}
        shown = [p for p in pts if hashable(spec.x.value(p.params)) in kept]
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
        k = hashable([x.value(p.params)] + [a.value(p.params) for a in series])
        if k in seen:
            extra = tuple(single_axis(k2) for k2 in SCALE_KEYS
                          if k2 in varied and not any(k2 in a.keys for a in series))
            return series + extra[:1]
        seen.add(k)
    return series


def _x_positions(x: Axis, pts: list[Point], benchmark: str):
    """(position of each x value, tick positions, tick labels, log2?, numeric?)."""
    key = x.single
    values = sorted({hashable(x.value(p.params)): x.value(p.params) for p in pts}.values(), key=x.order)
    if key and numeric(key, [v[0] for v in values]):
        divisor = param_label(key, benchmark)[1] or 1
        pos = {hashable(v): v[0] / divisor for v in values}
        log2 = log2_axis([v[0] for v in values])
        ticks = [pos[hashable(v)] for v in values]
        return pos, ticks, [x.label(v, benchmark) for v in values], log2, True
    pos = {hashable(v): float(i) for i, v in enumerate(values)}
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
        xs = [pos[hashable(spec.x.value(p.params))] for p in gpts]
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
        xs = [order[hashable(spec.x.value(p.params))] + offset for p in gpts]
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
    xs = sorted({hashable(spec.x.value(p.params)): spec.x.value(p.params) for p in pts}.values(),
                key=spec.x.order)
    ys = sorted({hashable(spec.y.value(p.params)): spec.y.value(p.params) for p in pts}.values(),
                key=spec.y.order)
    xi = {hashable(v): i for i, v in enumerate(xs)}
    yi = {hashable(v): i for i, v in enumerate(ys)}
    grid = np.full((len(ys), len(xs)), np.nan)
    cells: dict[tuple[int, int], list[Point]] = {}
    for p in pts:
        cells.setdefault((yi[hashable(spec.y.value(p.params))], xi[hashable(spec.x.value(p.params))]),
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
    bar.set_label("Mean " + axis_label(spec.metric, unit))
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
    ylabel = axis_label(spec.metric, unit) if spec.kind != "heatmap" else spec.y.title(bench)
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
        fig = new_figure(width, height)
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
        files = save_figure(fig, out_dir, f"{prefix}{spec.name}", formats)
    return Plot(spec, title, files, notes, xlabel, ylabel)


def save_figure(fig, out_dir: Path, name: str, formats) -> dict[str, Path]:
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


def describe_rules() -> list[str]:
    """The default rules, one string each, for pages."""
    return list(RULES)


__all__ = ["Axis", "Plot", "PlotSpec", "Point", "choose", "make_plots", "points", "render_plot"]
