"""`iolab runs`: an experiment's runs."""

from __future__ import annotations


from ..errors import IolabError
from .common import ID_HELP, error, integrity_text, project_dir

VERB = "runs"
EXAMPLES = ["iolab runs quickstart", "iolab runs quickstart --stack", "iolab runs quickstart RUN"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="list an experiment's results runs: origin, system, records by "
                       "status, complete or not, the order its jobs ran in")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN",
                   help="only this run, with its jobs in the order they ran (the order and its "
                        "seed are in the run's manifest)")
    s.add_argument("--stack", action="store_true",
                   help="also show what supplied each run's benchmarks: provider, spack.lock sha256, "
                        "binaries and their versions")
    s.set_defaults(func=run)


def _flags_text(run) -> str:
    """What was asked and not applied or not run (a setting ext4 ignored, Darshan without its
    runtime...): how many records, and the most frequent flag, from the run's digest."""
    kinds: dict[str, int] = {}
    for flags in run.digest.flags.values():
        for text, reps in flags.items():
            kinds[text] = kinds.get(text, 0) + len(reps)
    if not kinds:
        return ""
    text, count = max(kinds.items(), key=lambda kv: kv[1])
    more = f"; and {len(kinds) - 1} other flag(s)" if len(kinds) > 1 else ""
    return f"; flagged: {text} ({count} record{'s' if count != 1 else ''}){more}"


def _order_text(run) -> str | None:
    """How a run ordered its jobs, from its manifest (experiment/order.py)."""
    from ..experiment.order import Order

    data = run.manifest.get("order")
    if data is None:
        return None
    try:
        return Order.from_dict(data).describe()
    except ValueError:
        return "run order unreadable"


def _print_run_order(run) -> None:
    """`iolab runs ID RUN`: the run's jobs in the order they ran, each with its last record."""
    planned = [j for j in run.manifest.planned or [] if isinstance(j, dict)]
    if not planned:
        print("    no plan in the manifest (an imported run, or one older than plans)")
        return
    status = {}
    for rec in run.records:
        status[(rec.case_id, rec.repetition)] = rec.status
    print(f"    {len(planned)} jobs in the order they ran:")
    for n, job in enumerate(planned, 1):
        key = (str(job.get("case_id")), job.get("repetition"))
        print(f"    {n:4}  {job.get('part') or 'main'}  {key[0]}  rep {key[1]}  "
              f"{status.get(key, 'no record')}")


def run(args) -> int:
    from ..analysis import drift
    from ..results.lookup import list_runs, no_runs_error
    from ..results.runfiles import results_root
    from ..results.chain import ChainIndex, chain_paths
    from ..results import state as run_state
    from ..results.combine import load_chain
    from ..results.run import chain_of, load_run, run_dir

    root = results_root(project_dir())
    paths = list_runs(root, args.experiment)
    if not paths:
        raise no_runs_error(root, args.experiment)
    if args.run:
        paths = [run_dir(root, args.experiment, args.run, include_imported=True)]
    status = 0
    index = ChainIndex.of(paths[0].parent)     # every run's parent, read once for all the lines
    for path in paths:
        try:
            state = load_run(path)
            links = chain_paths(path, index)   # a chain that loops is refused here
            stands = run_state.of(state)
            chain = (load_chain(path) if not stands.parent
                     and any(run_state.of(load_run(p)).parent for p in links[1:2]) else None)
        except IolabError as exc:      # one bad run (or chain) does not hide the others
            print(f"{path.name}  unreadable: {exc}")
            status = 1
            continue
        line = (f"{path.name}  {stands.origin:8}  {state.manifest.system or '-':20}  "
                f"{stands.counts_text()}  {stands.describe()}")
        original = state.manifest.get("reproduces")
        if isinstance(original, dict):
            line += f"; reproduces {original.get('run')} (never the default 'latest')"
        source = state.manifest.get("reruns")      # `iolab reproduce FILE --system`
        if isinstance(source, dict):
            site, runs = source.get("site"), source.get("runs") or []
            line += f"; re-runs {', '.join(f'{r}@{site}' for r in runs)} from bundle {source.get('bundle')}"
        if stands.parent:
            line += f"; continues {stands.parent}"
        elif chain is not None:
            line += (f"; with continuations {', '.join(r.run_id for r in chain_of(chain)[1:])}: "
                     f"chain {run_state.of(chain).describe()}, {run_state.of(chain).counts_text()}")
        if state.reading.unreadable:
            line += f"; {len(state.reading.unreadable)} unreadable line(s) skipped"
        line += integrity_text(state)
        line += _flags_text(state)
        line += "".join(f"; {d.short()}" for d in drift.of_run(state) if d.drifts)
        if state.reading.unsaved:
            line += f"; unmerged: {', '.join(state.reading.unsaved)}"
        order = _order_text(state)
        if order:
            line += f"; {order}"
        print(line)
        if args.run:
            _print_run_order(state)
        if args.stack:
            from ..software import summarize

            for text in summarize(state.records) or ["stack: not recorded"]:
                print(f"    {text}")
    if status:
        error(f"some runs of {args.experiment!r} are unreadable (see above)")
    return status
