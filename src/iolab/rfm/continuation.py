"""`iolab resume` on the ReFrame side: in a continuation, only the jobs it names are built (the
others are skipped while ReFrame loads tests, so they are neither planned nor recorded), they
run in the chain's order, and the new run's manifest names the run it continues."""

from __future__ import annotations

import functools
import os

from ..analysis.campaign import RESUME_ENV, Continuation
from ..errors import IolabError
from ..experiment.order import Order


@functools.cache
def _read(path: str) -> Continuation:
    return Continuation.read(path)


def current(experiment: str) -> Continuation | None:
    """The continuation this process runs for `experiment`, if any."""
    path = os.environ.get(RESUME_ENV)
    if not path:
        return None
    cont = _read(path)
    return cont if cont.experiment == experiment else None


def skip_done(test, case) -> None:
    """Skip (at load: no plan, no record) a job the chain already has ok, and a repetition
    after the experiment's that is no drift reference's job (those tests exist for it alone)."""
    cont = current(case.experiment)
    if cont is not None and not cont.wants(case.part, case.case_id, test.repetition):
        test.skip(f"iolab resume: ok in the chain of run {cont.root}")
    if test.repetition > max(test._iolab_repetitions, test._iolab_reference_reps.get(case.case_id, 0)):
        test.skip("iolab: not a job of this run (a repetition after the experiment's is a drift "
                  "reference's)")


def manifest_extra(experiment: str) -> dict:
    cont = current(experiment)
    return cont.manifest_extra() if cont is not None else {}


def order(exp, repetitions: int, reference=()) -> Order:
    """The order this process runs `exp`'s jobs in: a continuation's (the chain's, so `iolab
    resume` and each round of `iolab search` keep it), else a new one as the experiment says."""
    cont = current(exp.id)
    if cont is not None and cont.order is not None:
        try:
            return Order.from_dict(cont.order)
        except ValueError as exc:
            raise IolabError(f"the continuation of run {cont.root} names no usable run order: "
                             f"{exc}") from None
    return Order.new(exp.order, repetitions, reference)
