"""`iolab why`: which recorded evidence moved with a metric across a run's cases (issue 39)."""

from __future__ import annotations

import json

from ..errors import IolabError
from ..layers.registry import example_param
from .common import ID_HELP, add_include_imported, add_set_aside, print_run_notes, project_dir

VERB = "why"
EXAMPLES = [
    "iolab why quickstart",
    "iolab why quickstart RUN --metric write_iops",
    "iolab why quickstart --by bs --json",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="why the best case won: the evidence (what the layers and the "
                       "benchmark recorded of each job) that moved with a "
                       "metric across a run's cases beyond noise, what did not, and what was "
                       "not recorded; measured association, never cause")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="default: the latest; RUN@SITE: a run "
                   "of another site (iolab import-bundle)")
    s.add_argument("--metric", help="the metric to explain (default: each part's first table "
                   "metric, as `iolab table` shows it)")
    s.add_argument("--by", metavar="PARAM", help="only this varied parameter in the 'along' part "
                   f"(as the run's records name it, e.g. {example_param().key})")
    s.add_argument("--all", action="store_true", help="every piece of evidence that moved, not "
                   "the strongest 8")
    s.add_argument("--json", action="store_true", help="the explanation as JSON")
    add_include_imported(s)
    add_set_aside(s)
    s.set_defaults(func=run)


def run(args) -> int:
    from ..analysis import why
    from ..present import why as text
    from ..results.choose import chosen_run

    state = chosen_run(project_dir(), args.experiment, args.run, args.include_imported,
                       args.set_aside)
    print_run_notes(state, f"run {state.run_id}: ")
    varied = {k for part in state.digest.parts.values() for k in part.varied}
    if args.by is not None and args.by not in varied:
        raise IolabError(f"--by {args.by}: not a parameter this run varies",
                         hint=f"it varies: {', '.join(sorted(varied)) or 'nothing'}")
    present = {m for part in state.digest.parts.values() for m in part.present}
    if args.metric is not None and args.metric not in present:
        raise IolabError(f"--metric {args.metric}: no record of this run has it",
                         hint=f"it has: {', '.join(sorted(present)) or 'no metric'}")
    found = why.explain(state, args.metric, args.by)
    if not found:
        raise IolabError(f"run {state.run_id} of {args.experiment!r}: no part has a metric with a "
                         f"better side to explain", hint="give --metric")
    if args.json:
        print(json.dumps([why.as_json(e) for e in found], indent=1, sort_keys=True))
    else:
        print("\n\n".join(text.render(e, limit=10**9 if args.all else 8) for e in found))
    return 0
