"""`iolab search`: an experiment's search, round by round."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import IolabError
from .common import YAML_HELP, experiment_path, project_dir

VERB = "search"
EXAMPLES = ["iolab search fio-search", "iolab search fio-search --rounds 2 --batch 4"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="run an experiment's search: rounds of adaptively chosen cases "
                       "through ReFrame (each a continuation run) until the budget is spent, then its "
                       "answer; run again to resume")
    s.add_argument("experiment", metavar="YAML|ID", help=YAML_HELP)
    s.add_argument("--profile", help="the profile to search (default: the experiment as written)")
    s.add_argument("--config", metavar="PATH",
                   help="ReFrame configuration (default: the search's, or reframe/config/local.py)")
    s.add_argument("--batch", type=int, default=1, metavar="N", help="cases per round (default 1)")
    s.add_argument("--rounds", type=int, metavar="N", help="stop after N rounds (resume later)")
    s.add_argument("--new", action="store_true", help="start another search instead of continuing "
                   "the latest")
    s.add_argument("--allow-changes", action="store_true",
                   help="continue even if the experiment YAML, spack.lock or a binary changed")
    s.add_argument("--dry-run", action="store_true", help="print the first round and stop")
    s.add_argument("reframe_args", nargs="*", metavar="-- REFRAME_ARG",
                   help="more ReFrame options after --")
    s.set_defaults(func=run)


def run(args) -> int:
    """Rounds of a search through ReFrame, then its answer."""
    from ..campaigns import campaign
    from ..experiment.load import load_experiment
    from ..results.runfiles import results_root
    from ..results.combine import load_chain
    from ..results.run import run_dir
    from ..campaigns.search.rounds import run_search, search_chain
    from ..present.search import report_run

    if args.batch < 1 or (args.rounds is not None and args.rounds < 1):
        raise IolabError("--batch and --rounds count cases and rounds: give 1 or more")
    root = project_dir()
    exp = load_experiment(experiment_path(args.experiment), args.profile)
    if args.config:
        config, system = Path(args.config), None
    else:
        chain = None if args.new else search_chain(root, exp.id)
        config, system = (campaign.config_for(chain, root) if chain is not None
                          else (root / "reframe" / "config" / "local.py", None))
    from ..rfm.systems import OUTPUT

    status = run_search(root, exp, config, system, args.batch, args.rounds, args.new,
                        args.allow_changes, args.reframe_args, args.dry_run,
                        log_dir=Path(OUTPUT) / "search")
    if args.dry_run:
        return status
    chain = search_chain(root, exp.id)
    if chain is None:
        return status
    text, found = report_run(load_chain(run_dir(results_root(root), exp.id, chain.run_id, True),
                                        root))
    sys.stdout.write(text)
    return status or (0 if found else 1)
