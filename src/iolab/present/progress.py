"""Plots of how a campaign went, beside a run's own plots (plots.py): a search's objective
job by job, and a metric's trend over runs. The same style (rcParams, deterministic SVG) and
output files as plots.py's."""

from __future__ import annotations

import importlib.util
import math
import textwrap
from dataclasses import dataclass
from pathlib import Path

from .. import stats
from ..analysis.report import metric_label
from .plots import COLORS, FIGSIZE, FORMATS, MARKERS, RC, axis_label, new_figure, save_figure

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
    ylabel = axis_label(objective, unit)
    title = f"Search progress: {metric_label(objective)} of each job ({'max' if maximize else 'min'})"
    notes = ["points: each job's value as recorded, counted as the setting that was in effect",
             "line: the best mean on the grid so far (the answer at that point); shaded: its 95% "
             "interval"]
    with mpl.rc_context(RC):
        fig = new_figure(*FIGSIZE)
        ax = fig.add_subplot()
        _draw_jobs(ax, steps, groups, objective, notes)
        _draw_best(ax, steps, notes)
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
        files = save_figure(fig, out_dir, f"{prefix}{SEARCH_PLOT}", formats)
    return ProgressPlot(title, files, notes, xlabel, ylabel)


def _draw_jobs(ax, steps, groups: dict, objective: str, notes: list[str]) -> None:
    """Each job's value as a point of its group; jobs without a value (or set aside) on the x
    axis; jobs that measured a case again ringed."""
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


def _draw_best(ax, steps, notes: list[str]) -> None:
    """The best mean so far as a step line, its 95% interval shaded, the rounds as dotted lines."""
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
        fig = new_figure(FIGSIZE[0], FIGSIZE[1] * len(panels))
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
            ax.set_ylabel(axis_label(metric, unit))
            ax.set_title(textwrap.fill(f"{metric_label(metric)} per run, system {system} "
                                       "(dotted: a change point)", 75))
            ax.legend(loc="best", frameon=True, fontsize=7)
            fig.autofmt_xdate()
        return save_figure(fig, out_dir, name, formats)
