"""iolab's run order (experiment/order.py) made ReFrame's.

ReFrame starts the test cases in the order of the list Runner.runall gets: its serial policy one
after another, its async one as job slots free up (reframe/frontend/executors: Runner._runall
iterates the list; `--exec-order` only sorts by name or shuffles without a seed, and the
dependency sort that follows keeps the loaded order, which is the matrix's, each case's
repetitions in a row). The session (session.py) hands runall the list that arrange() makes: each
experiment's cases take the places its cases had, in its run's order, and every case still comes
after the cases it depends on (a read after its write, the Spack stack before its users).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence


def exec_order_note(argv: Sequence[str]) -> str | None:
    """What a user who asked ReFrame for an order of its own is told: iolab's cases keep the
    run's order (the manifest records it), so that the order is never changed unsaid."""
    if not any(a == "--exec-order" or a.startswith("--exec-order=") for a in argv):
        return None
    return ("iolab: --exec-order does not reorder iolab's cases: they run in the run's order "
            "(blocks by repetition shuffled from a seed, or the matrix's with `order: matrix` in "
            "the experiment), which the manifest records and `iolab runs ID RUN` shows")


def arrange(testcases: list, is_case: Callable, order_of: Callable) -> list:
    """testcases in run order. is_case(check): whether a test is an iolab case; order_of(check):
    [(part, case id, repetition)] of the check's experiment in its run order."""
    where = {tc: i for i, tc in enumerate(testcases)}
    by_experiment: dict[str, list] = {}
    for tc in testcases:
        if is_case(tc.check):
            by_experiment.setdefault(tc.check._iolab_exp.id, []).append(tc)
    for cases in by_experiment.values():
        rank = {(cid, rep): k for k, (_part, cid, rep) in enumerate(order_of(cases[0].check))}
        slots = sorted(where[tc] for tc in cases)
        ranked = sorted(cases, key=lambda tc: (rank.get((tc.check.case, tc.check.repetition), len(rank)),
                                               where[tc]))
        for slot, tc in zip(slots, ranked):
            where[tc] = slot
    return _dependencies_first(testcases, where)


def _dependencies_first(testcases: list, where: dict) -> list:
    """The cases by `where`, except that none comes before a case it depends on."""
    present = set(testcases)
    index = {tc: n for n, tc in enumerate(testcases)}
    waiting = {tc: sum(dep in present for dep in tc.deps) for tc in testcases}
    dependents: dict = {}
    for tc in testcases:
        for dep in tc.deps:
            if dep in present:
                dependents.setdefault(dep, []).append(tc)
    ready = [(where[tc], index[tc], tc) for tc in testcases if not waiting[tc]]
    heapq.heapify(ready)
    out = []
    while ready:
        *_, tc = heapq.heappop(ready)
        out.append(tc)
        for other in dependents.get(tc, []):
            waiting[other] -= 1
            if not waiting[other]:
                heapq.heappush(ready, (where[other], index[other], other))
    return out if len(out) == len(testcases) else testcases    # a cycle: ReFrame refuses it
