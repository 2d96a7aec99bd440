"""`iolab resume`: the jobs of a run without an ok record, run again."""

from __future__ import annotations

from pathlib import Path

from ..errors import IolabError
from .common import ID_HELP, add_set_aside, error, project_dir

VERB = "resume"
EXAMPLES = ["iolab resume quickstart RUN --failed-only", "iolab resume quickstart --missing-only --dry-run",
            "iolab resume quickstart RUN --in-allocation"]


def add_parser(sub) -> None:
    s = sub.add_parser(VERB, help="run the jobs of a run that have no ok record (missing, failed, "
                       "aborted) as a continuation of it; tables then show the run and its continuations")
    s.add_argument("experiment", metavar="ID", help=ID_HELP)
    s.add_argument("run", nargs="?", metavar="RUN", help="a run of the chain (default: the latest)")
    s.add_argument("--failed-only", action="store_true", help="only jobs recorded failed or aborted")
    s.add_argument("--missing-only", action="store_true", help="only planned jobs with no record")
    s.add_argument("--allow-changes", action="store_true",
                   help="run even if the experiment YAML, spack.lock or a binary changed; the new run's "
                        "manifest lists what changed")
    s.add_argument("--config", metavar="PATH", help="ReFrame configuration (default: the one the run used)")
    s.add_argument("--dry-run", action="store_true", help="print what would run and stop")
    s.add_argument("--in-allocation", action="store_true",
                   help="inside salloc/sbatch: each job an srun step of this allocation "
                        "(IOLAB_IN_ALLOCATION=1; docs/campaigns.md, \"Allocation mode\")")
    s.add_argument("--cancel-stale", action="store_true",
                   help="cancel the jobs a killed session left queued or running on the system "
                        "(default: wait for them to end; IOLAB_MEASURE_WAIT=0 refuses instead)")
    s.add_argument("reframe_args", nargs="*", metavar="-- REFRAME_ARG",
                   help="more ReFrame options after --, e.g. -- --exec-policy=serial")
    add_set_aside(s)
    s.set_defaults(func=run)


def run(args) -> int:
    """Run the jobs of a run's chain that have no ok record, as a continuation of it."""

    from ..campaigns import campaign
    from ..results.runfiles import results_root
    from ..results import notes as run_notes, state as run_state
    from ..results.combine import load_chain
    from ..results.run import chain_of, run_dir
    from ..rfm.continuation import Continuation
    from ..rfm.allocation import ENV as ALLOCATION_ENV
    from ..rfm.leftovers import CANCEL_ENV

    root = project_dir()
    res = results_root(root)
    chain = load_chain(run_dir(res, args.experiment, args.run), root)
    run_notes.vouch(chain, args.set_aside)
    if args.failed_only and args.missing_only:
        raise IolabError("give --failed-only or --missing-only, not both")
    jobs = campaign.jobs_to_resume(chain, args.failed_only, args.missing_only)
    last = chain_of(chain)[-1]
    if not jobs:
        print(f"nothing to resume: every planned job of run {chain.run_id} "
              f"{'and its continuations ' if len(chain_of(chain)) > 1 else ''}has an ok record"
              + (" (or none matches the filter)" if args.failed_only or args.missing_only else ""))
        return 0
    jobs, added = campaign.with_producers(chain, jobs)
    changed = campaign.changes(chain, root)
    if changed and not args.allow_changes:
        raise IolabError("refusing to resume: what the jobs would run differs from the chain:\n  "
                         + "\n  ".join(changed),
                         hint="undo the change, or pass --allow-changes to run anyway and record "
                              "the differences in the new run's manifest")
    config, system = (Path(args.config), None) if args.config else campaign.config_for(chain, root)
    cont = Continuation(chain.experiment_id, last.run_id, chain.run_id, chain.manifest.profile,
                        [list(j) for j in jobs], changed, added, order=campaign.order_of(chain))
    print(f"resuming {chain.experiment_id} run {chain.run_id}: {len(jobs)} job(s) "
          f"({', '.join(f'{c} rep {r}' for _p, c, r in jobs[:6])}{', …' if len(jobs) > 6 else ''})")
    for line in added + [f"allowed change: {c}" for c in changed]:
        print(f"  {line}")
    # jobs a killed session left running are waited for (or cancelled) before the first job
    changes = {CANCEL_ENV: "1"} if args.cancel_stale else {}
    if args.in_allocation:
        changes[ALLOCATION_ENV] = "1"
    status, new = campaign.run_reframe(root, cont, config, None if args.config else system,
                                       args.reframe_args, args.dry_run, env_changes=changes)
    if args.dry_run:
        return 0
    if new is None:
        error(f"reframe made no continuation run (exit status {status})")
        return status or 1
    whole = load_chain(new, root)
    print(f"continuation run {new.name} of {chain.run_id}: chain {run_state.of(whole).describe()}; "
          f"{run_state.of(whole).counts_text()}")
    return status
