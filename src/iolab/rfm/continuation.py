"""`iolab resume` on the ReFrame side: in a continuation, only the jobs it names are built (the
others are skipped while ReFrame loads tests, so they are neither planned nor recorded), they
run in the chain's order, and the new run's manifest names the run it continues.

The continuation is a file IOLAB_RESUME names: campaigns/ (resume, reproduce, search rounds)
writes it before it starts ReFrame, and the runner reads it here; the format lives with its
reader, so the runner knows nothing of what starts it."""

from __future__ import annotations

import functools
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import IolabError
from ..experiment.order import Order

RESUME_ENV = "IOLAB_RESUME"
RERUN = "rerun"


@dataclass
class Continuation:
    experiment: str
    parent: str                       # the chain's latest run
    root: str                         # the chain's first run
    profile: str | None
    jobs: list[list] = field(default_factory=list)      # [part, case_id, repetition]
    changes: list[str] = field(default_factory=list)    # allowed differences, in words
    added: list[str] = field(default_factory=list)      # why jobs that were ok run again
    kind: str = "resume"              # resume: continues the chain; reproduce: a run of its own;
                                      # search: a round of a search (the first has no parent);
                                      # rerun: every job of another site's run, a run of its own
    round: int | None = None          # search: which round
    order: dict | None = None         # the chain's run order (experiment/order.py), kept by
                                      # its continuations; None: the new run draws its own
    source: dict | None = None        # rerun: the site, runs and bundle it re-runs
    code: dict | None = None          # rerun: the checkout's git state (the project it runs in
                                      # is a directory made for it, outside git)

    def write(self, path: Path) -> Path:
        path.write_text(json.dumps(asdict(self), indent=1) + "\n")
        return path

    @classmethod
    def read(cls, path) -> Continuation:
        try:
            data = json.loads(Path(path).read_text())
            return cls(**data)
        except (OSError, ValueError, TypeError) as exc:
            raise IolabError(f"{RESUME_ENV}={path}: not a continuation file: {exc}") from None

    def wants(self, part: str, case_id: str, repetition: int) -> bool:
        return self.kind == RERUN or [part, case_id, repetition] in self.jobs

    def manifest_extra(self) -> dict:
        if self.kind == "search":
            chain = {"parent": self.parent, "chain_root": self.root} if self.parent else {}
            return {"search_round": self.round, "search_jobs": len(self.jobs), **chain}
        if self.kind == "reproduce":
            return {"reproduces": {"run": self.parent, "jobs": self.jobs}, "differences": self.changes}
        if self.kind == RERUN:
            return {**(self.code or {}), "reruns": self.source, "differences": self.changes}
        return {"parent": self.parent, "chain_root": self.root, "resumed_jobs": len(self.jobs),
                "allowed_changes": self.changes}


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


def profile(experiment: str) -> tuple[bool, str | None]:
    """(whether a rerun fixes the profile, the profile): a rerun runs its source's profile, none
    included, whatever IOLAB_PROFILE or the system would choose."""
    cont = current(experiment)
    return (True, cont.profile) if cont is not None and cont.kind == RERUN else (False, None)


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
