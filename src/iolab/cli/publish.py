"""`iolab publish`: a run's report folder."""

from __future__ import annotations

from pathlib import Path

from .common import (ID_HELP, add_column_options, add_include_imported, add_set_aside,
                    columns_asked, note)

VERB = "publish"
EXAMPLES = [
    "iolab publish quickstart --out quickstart-page",
    "iolab publish quickstart --runs RUN_A RUN_B --out page --force",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="write a self-contained report folder (HTML, Markdown, CSV, plots)",
                       description="iolab publish ID [--runs RUN ...] --out DIR: index.html with the "
                                   "experiment, provenance, tables, plots, requested vs applied, Darshan "
                                   "findings and the published study; tables.md, tables.csv, report.md, "
                                   "plots/. Results are only read.")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("--runs", nargs="+", metavar="RUN",
                   help="run ids (or unique prefixes/suffixes); default: the latest")
    s.add_argument("--out", required=True, metavar="DIR", help="a new or empty directory")
    add_column_options(s)
    s.add_argument("--force", action="store_true",
                   help="replace the files an earlier `iolab publish` wrote in DIR (others are left alone)")
    add_include_imported(s)
    add_set_aside(s)
    s.set_defaults(func=run)


def run(args) -> int:
    from ..present.publish import publish

    done = publish(args.experiment, Path(args.out), args.runs, force=args.force,
                   include_imported=args.include_imported, set_aside=args.set_aside,
                   columns=columns_asked(args))
    for text in done.notes:
        note(text)
    print(f"published {args.experiment} (run{'s' if len(done.runs) > 1 else ''} "
          f"{', '.join(done.runs)}): {len(done.files)} files, {done.plots} plot(s) in {done.out}")
    print(f"open {done.out / 'index.html'}")
    return 0
