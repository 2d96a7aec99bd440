"""`iolab darshan`: Darshan summaries of a run's cases or of logs. The layer offers it
(DarshanLayer.verbs); what it needs of runs and the CLI comes through base.VerbServices."""

from __future__ import annotations

import json
import re
import sys
from functools import partial
from pathlib import Path

from ...errors import IolabError

VERB = "darshan"
AFTER = "import"            # where `iolab --help` lists it
EXAMPLES = [
    "iolab darshan quickstart",
    "iolab darshan quickstart --case 3f2a --html page/",
    "iolab darshan job.darshan",
]
RUN_ID = re.compile(r"\d{8}T\d{6}Z-[0-9a-f]{6}")


def add_parser(sub, services) -> None:
    s = sub.add_parser(VERB, help="Darshan summary and findings of a run's cases, or of any logs")
    s.add_argument("targets", nargs="+", metavar="ID|LOG",
                   help="an experiment id (the cases of its run), or Darshan logs of any job")
    s.add_argument("--run", help="run id (or a unique prefix/suffix); default: the latest")
    s.add_argument("--case", help="a case id (or its prefix)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.add_argument("--html", metavar="DIR", help="also write PyDarshan's HTML job summary into DIR")
    services.add_include_imported(s)
    s.set_defaults(func=partial(run, services=services))


def run(args, services) -> int:
    from . import views

    out_dir = Path(args.html) if args.html else None
    status = 0
    target = args.targets[0]
    if len(args.targets) == 1 and not Path(target).exists() and RUN_ID.fullmatch(target):
        owners = services.runs_named(target)
        raise IolabError(f"{target} is a run id, not a Darshan log",
                         hint=f"iolab darshan {owners[0] if len(owners) == 1 else 'EXPERIMENT'} "
                              f"--run {target}")
    if len(args.targets) > 1 or Path(target).exists() or not services.is_experiment_id(target):
        # Any Darshan logs, e.g. from production jobs. Every log is shown; one that cannot be
        # read makes the exit status 1.
        shown, status = views.of_logs(args.targets, out_dir, lambda line: print(line, file=sys.stderr))
    else:
        run = services.load_run(target, args.run, args.include_imported)
        shown = views.of_run(run, args.case, out_dir, services)
    if args.json:
        print(json.dumps(shown, indent=2, default=str))
        return status
    for text in views.render(shown):
        print(text)
    return status
