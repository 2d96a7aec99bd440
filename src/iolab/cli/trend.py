"""`iolab trend`: a metric over every run of an experiment."""

from __future__ import annotations

import math
from pathlib import Path

from ..errors import IolabError
from .common import ID_HELP, note, project_dir

VERB = "trend"
EXAMPLES = [
    "iolab trend quickstart",
    "iolab trend quickstart --metric write_iops --since 2026-11-01",
    "iolab trend quickstart --system local:default --cases 3cf5ac1a --plot trend/",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="a metric over all runs of an experiment in time order, per "
                       "case and system, with the runs where it changed (change points, ruptures)")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("--metric", help="the metric (default: the benchmark's first table metric)")
    s.add_argument("--since", metavar="DATE", help="only runs from this UTC date or time on, e.g. "
                   "2026-11-21 or 2026-11-21T10:00")
    s.add_argument("--system", metavar="S", help="only runs of this system (as `iolab runs` shows it)")
    s.add_argument("--all-systems", action="store_true",
                   help="one series per case over every system's runs (default: each system apart)")
    s.add_argument("--cases", nargs="+", metavar="CASE", help="only these case ids (or prefixes)")
    s.add_argument("--penalty", type=float, default=3.0, metavar="P",
                   help="change-point penalty, in units of the run-to-run noise squared times "
                        "ln(runs); larger finds fewer changes (default 3)")
    s.add_argument("--plot", metavar="DIR", help="also draw the series into DIR/trend.{png,svg} "
                   "(needs matplotlib)")
    s.add_argument("--include-imported", action="store_true",
                   help="also read imported runs (default: measured runs only)")
    s.add_argument("--set-aside", action="store_true",
                   help="use the records that pass the checks of a run whose records fail them")
    s.set_defaults(func=run)


def run(args) -> int:
    from ..analysis import trend
    from ..analysis.compare import direction
    from .. import units
    from ..analysis.report import param_label
    from ..results.choose import runs_in_time

    if not trend.available():
        raise IolabError(trend.MISSING)
    if not 0 < args.penalty < math.inf:      # false for nan too: a change at every run, or never
        raise IolabError(f"--penalty {args.penalty:g}: give a positive finite number (default "
                         f"{trend.DEFAULT_PENALTY:g}; larger finds fewer changes)")
    if args.all_systems and args.system:
        raise IolabError("give --system S or --all-systems, not both")
    # each line a run's checks leave out named, as `table --set-aside` names it
    runs = runs_in_time(project_dir(), args.experiment, args.since, args.include_imported,
                        args.set_aside, lambda run, text: note(f"run {run.run_id}: {text}"))

    def label(rec) -> str:
        shown = [(param_label(k, rec.benchmark), rec.params[k]) for k in rec.varied if k in rec.params]
        return ", ".join(f"{name}={units.shown(v, units.CELL, divisor=divisor)}"
                         for (name, divisor), v in shown)

    aside: list = []
    series = trend.series_of(runs, args.metric, args.system, args.all_systems, args.cases, label, aside)
    if not series:
        what = f"metric {args.metric!r}" if args.metric else "a metric"
        raise IolabError(f"no ok record of {args.experiment!r} has {what}"
                         + (f" on system {args.system!r}" if args.system else "")
                         + (f" since {args.since}" if args.since else "")
                         + (f" for cases {' '.join(args.cases)}" if args.cases else ""),
                         hint=f"{len(runs)} run(s) read; see `iolab runs {args.experiment}`")
    changes = trend.find_changes(series, args.penalty)
    print(trend.render(series, changes, args.experiment, args.penalty,
                       lambda m, u: direction(m, u, None), aside))
    if args.plot:
        from ..present.plots import MISSING_MATPLOTLIB
        from ..present.progress import trend_plot

        files = trend_plot(series, Path(args.plot))
        if files is None:
            raise IolabError(MISSING_MATPLOTLIB.replace("no plots", "no trend plot"))
        print("plot: " + ", ".join(str(f) for f in files.values()))
    return 0
