"""`iolab darshan`: Darshan summaries of a run's cases or of logs."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ..errors import IolabError
from .common import add_include_imported, project_dir

VERB = "darshan"
EXAMPLES = [
    "iolab darshan quickstart",
    "iolab darshan quickstart --case 3f2a --html page/",
    "iolab darshan job.darshan",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="Darshan summary and findings of a run's cases, or of any logs")
    s.add_argument("targets", nargs="+", metavar="ID|LOG",
                   help="an experiment id (the cases of its run), or Darshan logs of any job")
    s.add_argument("--run", help="run id (or a unique prefix/suffix); default: the latest")
    s.add_argument("--case", help="a case id (or its prefix)")
    s.add_argument("--json", action="store_true", help="print JSON")
    s.add_argument("--html", metavar="DIR", help="also write PyDarshan's HTML job summary into DIR")
    add_include_imported(s)
    s.set_defaults(func=run)


def _looks_like_run_id(text: str) -> bool:
    import re

    return re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{6}", text) is not None


def run(args) -> int:
    from ..present import darshan
    from ..results.runfiles import is_experiment_id
    from ..results.runfiles import results_root
    from ..results.run import load_run, run_dir

    out_dir = Path(args.html) if args.html else None
    status = 0
    target = args.targets[0]
    if len(args.targets) == 1 and not Path(target).exists() and _looks_like_run_id(target):
        owners = sorted(p.parent.name for p in results_root(project_dir()).glob(f"*/{target}"))
        raise IolabError(f"{target} is a run id, not a Darshan log",
                         hint=f"iolab darshan {owners[0] if len(owners) == 1 else 'EXPERIMENT'} "
                              f"--run {target}")
    if len(args.targets) > 1 or Path(target).exists() or not is_experiment_id(target):
        # Any Darshan logs, e.g. from production jobs. Every log is shown; one that cannot be
        # read makes the exit status 1.
        shown, status = darshan.of_logs(args.targets, out_dir, lambda line: print(line, file=sys.stderr))
    else:
        run = load_run(run_dir(results_root(project_dir()), target, args.run, args.include_imported))
        shown = darshan.of_run(run, args.case, out_dir)
    if args.json:
        print(json.dumps(shown, indent=2, default=str))
        return status
    for text in darshan.render(shown):
        print(text)
    return status
