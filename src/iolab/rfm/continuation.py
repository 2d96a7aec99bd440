"""`iolab resume` on the ReFrame side: in a continuation, only the jobs it names are built (the
others are skipped while ReFrame loads tests, so they are neither planned nor recorded), and the
new run's manifest names the run it continues."""

from __future__ import annotations

import functools
import os

from ..analysis.campaign import RESUME_ENV, Continuation


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
    """Skip (at load: no plan, no record) a job the chain already has ok."""
    cont = current(case.experiment)
    if cont is not None and not cont.wants(case.part, case.case_id, test.repetition):
        test.skip(f"iolab resume: ok in the chain of run {cont.root}")


def manifest_extra(experiment: str) -> dict:
    cont = current(experiment)
    return cont.manifest_extra() if cont is not None else {}
