"""`iolab table`: a run's tables."""

from __future__ import annotations

import sys

from ..errors import IolabError
from ..layers.registry import example_columns
from .common import (ID_HELP, add_column_options, add_include_imported, add_set_aside,
                    columns_asked, metrics_arg, note, print_run_notes, project_dir)

VERB = "table"
_COLUMNS = example_columns()    # a layer's columns, on an experiment whose runs have them
EXAMPLES = [
    "iolab table quickstart",
    "iolab table quickstart --format csv",
    "iolab table quickstart --since 2026-11-01 --metrics write_bw,write_iops",
    *([f"iolab table {_COLUMNS[1]} {_COLUMNS[0]} {_COLUMNS[2]}"] if _COLUMNS else []),
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="print a run's comparison table")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("--run", help="run id (or a unique prefix/suffix); default: the latest")
    s.add_argument("--runs", nargs="+", metavar="RUN",
                   help="pool the repetitions of these runs where their provenance agrees")
    s.add_argument("--since", metavar="DATE|RUN",
                   help="pool every run from this date (2026-11-21, UTC) or run id on")
    s.add_argument("--format", choices=["md", "csv", "json"], default="md",
                   help="Markdown tables with footnotes (default md), CSV (the notes go to stderr) or JSON")
    s.add_argument("--metrics", help="comma-separated metric names, e.g. write_bw,write_bw_max")
    add_column_options(s)
    s.add_argument("--summary", action="store_true",
                   help="end with one line: how many jobs ran, how many were skipped and why")
    add_include_imported(s)
    add_set_aside(s)
    s.set_defaults(func=run)


def run(args) -> int:
    from ..analysis.columns import run_tables
    from ..analysis.report import render
    from ..results.choose import chosen_run, pooled_runs

    if args.runs or args.since:
        if args.run:
            raise IolabError("give --run, or --runs/--since to pool several runs, not both")
        state = pooled_runs(project_dir(), args.experiment, args.runs, args.since, args.include_imported,
                            args.set_aside)
    else:
        state = chosen_run(project_dir(), args.experiment, args.run, args.include_imported, args.set_aside)
    from ..analysis import drift

    metrics = metrics_arg(args.metrics, state)
    tables = run_tables(state, metrics, columns_asked(args))
    drifts = drift.notes(drift.of_run(state))
    if args.format == "csv":
        print_run_notes(state)     # CSV readers get the table only
        for text in drifts:
            note(text)
    sys.stdout.write(render(tables, args.format, state, drifts))
    if args.format == "md":         # an experiment tagged io500: its phase table and score
        from ..analysis import io500

        if io500.applies(state):
            sys.stdout.write(io500.render(state.records))
    if args.summary:
        from ..analysis.report import run_summary

        print(run_summary(state))
    return 0
