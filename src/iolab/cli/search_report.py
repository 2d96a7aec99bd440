"""`iolab search-report`: a search's answer."""

from __future__ import annotations

import sys

from .common import ID_HELP, add_set_aside, print_run_notes, project_dir

VERB = "search-report"
EXAMPLES = ["iolab search-report fio-search"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="a search's answer: the best setting found, its 95%% "
                       "interval, cases run of the grid, the runner-up (Welch) and the model's optimum")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="a run of the chain (default: the latest)")
    s.add_argument("--objective", metavar="METRIC",
                   help="the metric to answer for (default: the search's; needed for a run of the "
                        "whole grid)")
    add_set_aside(s)
    s.set_defaults(func=run)


def run(args) -> int:
    """A search's answer: the best setting found with its interval, the runner-up, the model."""
    from ..results.runfiles import results_root
    from ..results import notes as run_notes
    from ..results.combine import load_chain
    from ..results.run import run_dir
    from ..present.search import report_run

    root = project_dir()
    run = load_chain(run_dir(results_root(root), args.experiment, args.run, True), root)
    run_notes.vouch(run, args.set_aside)
    print_run_notes(run)
    text, found = report_run(run, args.objective)
    sys.stdout.write(text)
    return 0 if found else 1
