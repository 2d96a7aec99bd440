"""`iolab plan`: an experiment's cases, jobs, bytes and cost."""

from __future__ import annotations

import math
import os
import sys

from ..errors import IolabError
from .common import YAML_HELP, experiment_path, project_dir

VERB = "plan"
EXAMPLES = [
    "iolab plan quickstart",
    "iolab plan kaust-stripe-count --profile full --budget 50",
    "iolab plan quickstart --suggest-reps --target-ci 5",
    "iolab plan archer-fpp-vs-ssf --profile full --queue-wait 20m --longest-allocation 24h",
]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="list an experiment's cases, jobs and bytes written")
    s.add_argument("experiment", metavar="YAML|ID", help=YAML_HELP)
    s.add_argument("--profile", help="the profile to plan (default: IOLAB_PROFILE, else the one the "
                   "local system runs where the experiment has it)")
    s.add_argument("--suggest-reps", action="store_true",
                   help="suggest repetitions per case from earlier runs of the same case ids")
    s.add_argument("--target-ci", type=float, default=5.0, metavar="PERCENT",
                   help="target 95%% CI half-width as a percentage of the mean (default 5; above 0, "
                        "at most 100)")
    s.add_argument("--budget", type=float, metavar="NODE_HOURS",
                   help="refuse a plan whose node-hours (at the time limits) exceed this, and say "
                        "what to trim")
    s.add_argument("--queue-wait", metavar="DURATION",
                   help="how long a job waits in the queue on the target system (e.g. 20m): the plan "
                        "says how long each mode waits")
    s.add_argument("--longest-allocation", metavar="DURATION",
                   help="the longest time limit the partition allows (e.g. 24h): the plan says how "
                        "many allocations the campaign needs")
    s.set_defaults(func=run)


def _default_profile(given: str | None):
    """The profile a run would use: --profile, else IOLAB_PROFILE, else the one the default
    system (`local`) runs where the experiment has it; else the experiment as written."""
    from ..rfm.systems import LOCAL_PROFILE, system_profile

    def choose(profiles: list[str]) -> str | None:
        wanted = given or os.environ.get("IOLAB_PROFILE")
        if wanted:
            return wanted if profiles or given else None
        return system_profile([LOCAL_PROFILE], profiles)

    return choose


def _durations(args) -> tuple[int | None, int | None]:
    from ..units import parse_time_limit

    out = []
    for flag, value in (("--queue-wait", args.queue_wait), ("--longest-allocation", args.longest_allocation)):
        try:
            out.append(None if value is None else parse_time_limit(value))
        except ValueError as exc:
            raise IolabError(f"{flag} {value}: {exc}") from None
    return out[0], out[1]


def run(args) -> int:
    from ..analysis import planning
    from ..experiment.load import load_experiment
    from ..experiment.matrix import expand, varied_keys
    from ..results.lookup import list_runs
    from ..results.runfiles import results_root

    if not 0 < args.target_ci <= 100:            # false for nan too
        raise IolabError(f"--target-ci {args.target_ci:g}: give a percentage above 0, at most 100")
    if args.budget is not None and not 0 < args.budget < math.inf:
        raise IolabError(f"--budget {args.budget:g}: give a positive number of node-hours")
    waits = _durations(args)          # refused before the experiment is read
    exp = load_experiment(experiment_path(args.experiment), choose_profile=_default_profile(args.profile))
    cases = expand(exp)
    # Keys that vary anywhere in the experiment (storage between parts, say), in one order
    keys = varied_keys(cases)
    note = "" if args.profile else (" (IOLAB_PROFILE)" if os.environ.get("IOLAB_PROFILE") else
                                    " (what the default system, local, runs; --profile to choose)")
    # One write for the table: a print per case costs a system call each where stdout is unbuffered.
    sys.stdout.write(planning.overview(exp, cases, keys, note if exp.profile else ""))
    try:
        runs = list_runs(results_root(project_dir()), exp.id)
    except IolabError:
        runs = []
    spent, modes = planning.plan_cost(exp, cases, runs)
    for line in spent.lines(len(cases)) + modes.lines(*waits):
        print(line)
    planning.check_budget(exp, cases, keys, spent, args.budget)
    if args.suggest_reps:
        runs = list_runs(results_root(project_dir()), exp.id)
        print()
        print(planning.suggestions(exp, cases, runs, args.target_ci))
    return 0
