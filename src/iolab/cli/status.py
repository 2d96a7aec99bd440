"""`iolab status`: how far a run is."""

from __future__ import annotations

import math
import sys

from ..errors import IolabError
from .common import ID_HELP, integrity_text, project_dir

VERB = "status"
EXAMPLES = ["iolab status quickstart", "iolab status quickstart --watch 10"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="how far a run is: jobs recorded of planned, failures, elapsed, ETA")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="default: the latest")
    s.add_argument("--watch", metavar="SECONDS", nargs="?", const="5",
                   help="read the run again every SECONDS (default 5; more than 0, at most a day) "
                        "until it ends")
    s.set_defaults(func=run)


MAX_WATCH = 86400.0        # seconds: --watch reads a run again at least once a day


def _seconds(option: str, text) -> float:
    """A positive finite number of seconds, at most MAX_WATCH."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= MAX_WATCH:      # false for nan too
        raise IolabError(f"{option} {text}: give a positive number of seconds, at most "
                         f"{MAX_WATCH:g} (e.g. {option} 5)")
    return value


def run(args) -> int:
    """How far a run (with its continuations) is; --watch repeats until it ends."""
    import time

    from ..results.runfiles import results_root
    from ..results import state as run_state
    from ..results.combine import load_chain
    from ..results.run import run_dir

    watch = _seconds("--watch", args.watch) if args.watch is not None else None
    res = results_root(project_dir())
    path = run_dir(res, args.experiment, args.run, True)
    tty = sys.stdout.isatty()
    while True:
        run = load_chain(path)
        stands = run_state.of(run)
        gone = stands.writer_gone
        # a dead writer's run is said to be so (killed), never 'unfinished ... ETA'
        state = stands.describe() if gone else stands.state
        line = (f"{args.experiment} run {run.run_id}: {state}: {stands.progress(time.time())}"
                + integrity_text(run))
        if not watch or stands.state != "unfinished" or gone:
            print(("\r" if tty and watch else "") + line)
            if watch and gone:      # it will never end: say so, do not wait
                raise IolabError(f"run {run.run_id} will not finish: {stands.describe()}",
                                 hint=f"`iolab resume {args.experiment} {run.run_id}` continues it")
            return 0 if stands.state != "unfinished" or not watch else 1
        print(("\r" + line + "\033[K") if tty else line, end="" if tty else "\n", flush=True)
        time.sleep(watch)
