"""`iolab search` through ReFrame: each round of proposed jobs is a ReFrame run of only those
jobs (a continuation of the search's previous round, campaign.run_reframe), until the budget is
spent; the latest search of an experiment is found again from its manifests (search_chain)."""

from __future__ import annotations

from pathlib import Path

from ...errors import IolabError
from .observations import round_line
from .space import Space
from .strategies import drive


def search_chain(root, exp_id: str):
    """The latest search of `exp_id` (its first run and continuations), or None."""
    from ...results.record import Manifest
    from ...results.lookup import list_runs
    from ...results.manifests import read_manifest
    from ...results.runfiles import results_root
    from ...results.combine import load_chain

    for path in reversed(list_runs(results_root(root), exp_id)):
        if Manifest.from_json(read_manifest(path)).get("search_round") is not None:
            return load_chain(path, root)
    return None


def run_search(root, exp, config, system, batch: int, rounds: int | None = None, new: bool = False,
               allow_changes: bool = False, reframe_args=(), dry_run: bool = False, say=print,
               log_dir: Path | None = None) -> int:
    """`iolab search`: rounds of proposed jobs, each a ReFrame run of only those jobs (a
    continuation of the search's previous round), until the budget is spent (or `rounds`).
    One line per round; with `log_dir`, ReFrame's output of each round goes to a file there,
    which the round's line names."""
    import time

    from .. import campaign
    from ...experiment.matrix import expand
    from ...results.combine import load_chain
    from ...results.run import chain_of
    from ...rfm.continuation import Continuation

    if exp.search is None:
        raise IolabError(f"{exp.id} has no search: section", file=str(exp.path),
                         hint="add search: {objective: METRIC, budget: N} (docs/searching.md)")
    space = Space.of(expand(exp))
    chain = None if new else search_chain(root, exp.id)
    if chain is not None:
        campaign.refuse_if_running(chain)
        changed = campaign.changes(chain, root)
        if changed and not allow_changes:
            raise IolabError("refusing to continue the search of run " + chain.run_id + ": what it "
                             "would run differs:\n  " + "\n  ".join(changed),
                             hint="--new starts another search; --allow-changes continues anyway")
        say(f"continuing the search of run {chain.run_id} ({len(chain_of(chain))} rounds so far)")

    started, measured = time.monotonic(), 0
    limit = exp.search.budget * max(1, exp.search.repetitions)     # jobs the budget allows
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)

    def measure(jobs, records):
        """One round: a ReFrame run of only `jobs`, continuing the search's chain."""
        nonlocal chain, measured
        last = chain_of(chain)[-1] if chain is not None else None
        number = len(chain_of(chain)) + 1 if chain is not None else 1
        cont = Continuation(exp.id, last.run_id if last else "", chain.run_id if chain else "",
                            exp.profile, [list(j) for j in jobs], kind="search", round=number,
                            order=campaign.order_of(chain))
        cases = list(dict.fromkeys(cid for _p, cid, _r in jobs))
        log = (log_dir / f"{exp.id}-round{number}-{time.strftime('%Y%m%dT%H%M%S')}.log"
               if log_dir is not None and not dry_run else None)
        head = f"round {number}: {len(cases)} case(s), {len(jobs)} job(s): {', '.join(cases)}"
        say(head if log is None else f"{head}; ReFrame's output: {log}")
        status, path = campaign.run_reframe(root, cont, config, system, reframe_args, dry_run,
                                            log=log)
        if dry_run:
            return None
        if path is None:
            raise IolabError(f"round {number}: reframe made no run (exit status {status})")
        chain = load_chain(path, root)
        got = [r for r in chain.records if r.run_id == path.name]
        if not got:
            raise IolabError(f"round {number}: run {path.name} recorded nothing (exit status "
                             f"{status}): the search stops here"
                             + (f"; ReFrame's output: {log}" if log else ""))
        measured += len(got)
        spent = time.monotonic() - started
        done = len(chain.records)
        left = max(0, limit - done)
        eta = f", about {spent / measured * left:.0f} s left" if left and measured else ""
        say(f"  {round_line(got, exp.search.objective)}; {done} of at most {limit} jobs, "
            f"{spent:.0f} s{eta}")
        return chain.records

    drive(exp.search, space, measure, chain.records if chain is not None else [], batch, rounds,
          on_spent=lambda records: say("the search's budget is spent" if records else "nothing to propose"))
    return 0
