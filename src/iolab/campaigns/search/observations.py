"""What a search's records say: the points in effect with their objective values, the jobs and
cases spent (observe), and the jobs in the order they ran with the best so far (search_progress).

Records count as what was applied, never as what was asked for: a case whose striping was not
applied, or whose MPI-IO hints the library lowered, is an observation of the setting that was in
effect. If that setting is another case of the grid, the value is that case's; if it is on no
case of the grid (striping not applied: the directory's default layout), it is kept apart
(`Point.case` None) and the case asked for counts as spent and tells the model nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ... import stats
from ...experiment.load import Search
from ...experiment.matrix import Case
from ...results.record import Record
from .space import GRID, PART, Space


NOT_APPLIED = "not applied"


def effective_setting(record: Record, axes: list[str]) -> tuple[dict, list[str]]:
    """The axes' values in effect for a record, and in words what differs from the request."""
    setting, notes = {}, []
    for k in axes:
        asked = record.part if k == PART else record.params.get(k)
        value = asked
        if k != PART and asked is not None:
            not_applied = record.observed.not_applied(k)
            got = None if not_applied else record.observed.effective(k)
            if not_applied:
                value = NOT_APPLIED
                notes.append(f"{k}={asked}: {not_applied}")
            elif got is not None and got != asked:
                value = got
                notes.append(f"{k}: requested {asked}, effective {got}")
        setting[k] = value
    return setting, notes


@dataclass
class Point:
    """A setting that was in effect, with its objective values (ok repetitions)."""

    setting: dict
    case: Case | None               # the grid case with this setting; None: off the grid
    values: list[float] = field(default_factory=list)
    requested: list[str] = field(default_factory=list)      # case ids asked for
    notes: list[str] = field(default_factory=list)

    @property
    def mean(self) -> float | None:
        return math.fsum(self.values) / len(self.values) if self.values else None


@dataclass
class State:
    """What the records say: the points in effect, and the jobs and cases spent."""

    points: list[Point]
    spent: dict[str, set]           # requested case id -> repetitions recorded (any status)
    values_by_request: dict[str, list[float]]
    set_aside: list[tuple] = field(default_factory=list)    # (case id, repetition, value): stats.LIMIT

    def best(self, maximize: bool) -> Point | None:
        found = [p for p in self.points if p.case is not None and p.values]
        if not found:
            return None
        return (max if maximize else min)(found, key=lambda p: (p.mean, len(p.values)))

    @property
    def jobs(self) -> int:
        return sum(len(r) for r in self.spent.values())


class _Observer:
    """Records taken one at a time into the points in effect (observe, progress)."""

    def __init__(self, space: Space, objective: str):
        self.space, self.objective = space, objective
        self.ids = {c.case_id for c in space.cases}
        self.points: dict[tuple, Point] = {}
        self.spent: dict[str, set] = {}
        self.by_request: dict[str, list[float]] = {}
        self.set_aside: list[tuple] = []

    def add(self, r: Record) -> Point | None:
        """Take one record; the point its value went to (None: no value, or not this grid's)."""
        if r.case_id not in self.ids or r.status == "aborted":
            return None     # another grid's case, or interrupted: not spent (it runs again)
        self.spent.setdefault(r.case_id, set()).add(r.repetition)
        value = r.value(self.objective) if r.ok else None
        if value is None:
            return None
        if not stats.usable(value):     # in no mean, proposal or answer; the report names it
            self.set_aside.append((r.case_id, r.repetition, value))
            return None
        setting, notes = effective_setting(r, self.space.axes)
        key = tuple(repr(setting[k]) for k in self.space.axes)
        p = self.points.get(key)
        if p is None:
            p = self.points[key] = Point(setting, self.space.case_for(setting))
        p.values.append(float(value))
        if r.case_id not in p.requested:
            p.requested.append(r.case_id)
        p.notes += [n for n in notes if n not in p.notes]
        self.by_request.setdefault(r.case_id, []).append(float(value))
        return p

    def state(self) -> State:
        return State(list(self.points.values()), self.spent, self.by_request, self.set_aside)


def observe(space: Space, records: list[Record], objective: str) -> State:
    seen = _Observer(space, objective)
    for r in records:
        seen.add(r)
    return seen.state()


@dataclass
class Step:
    """One job of a search, in the order it ran (search_progress)."""

    index: int                      # 1, 2, ...: jobs of this grid in the order they ran
    round: int                      # 1, 2, ...: the run of the chain it is in
    record: Record
    value: float | None             # the objective as recorded (None: no value)
    on_grid: bool                   # its value counts as a case of the grid (what was in effect)
    lowered: bool                   # counted as another case than asked for (a lowered hint)
    best: float | None              # the best mean on the grid after this job
    best_ci: tuple | None = None    # its 95% interval (None below 2 values)
    again: bool = False             # a repetition beyond those asked for: separating the best
    set_aside: float | None = None  # its value, when the statistics set it aside (stats.usable)


def search_progress(search: Search, space: Space, records: list[Record],
                    rounds: list[str] | None = None) -> list[Step]:
    """The search's jobs in the order they ran: by round (the runs of the chain, `rounds` its run
    ids oldest first), then by the time each record was written, then as written; with the best
    mean on the grid after each (what State.best says at that point). Aborted jobs and other
    grids' cases are not jobs of the search (observe)."""
    at = {rid: i for i, rid in enumerate(rounds or [])}
    order_ = sorted(range(len(records)),
                    key=lambda i: (at.get(records[i].run_id, len(at)), records[i].recorded or "", i))
    seen = _Observer(space, search.objective)
    steps: list[Step] = []
    for i in order_:
        r = records[i]
        if r.case_id not in seen.ids or r.status == "aborted":
            continue
        before = len(seen.set_aside)
        p = seen.add(r)
        aside = seen.set_aside[-1][2] if len(seen.set_aside) > before else None
        best = seen.state().best(search.maximize)
        steps.append(Step(len(steps) + 1, at.get(r.run_id, len(at)) + 1, r,
                          p.values[-1] if p is not None else None,
                          p is not None and p.case is not None,
                          p is not None and p.case is not None and p.case.case_id != r.case_id,
                          best.mean if best is not None else None,
                          stats.summarize(best.values).ci if best is not None else None,
                          search.strategy != GRID and r.repetition > search.repetitions, aside))
    return steps


def round_line(got: list[Record], objective: str) -> str:
    """What a round of `iolab search` measured: its jobs ok, and the values of the objective
    set aside (stats.usable: in no mean, proposal or answer), named."""
    aside = [(r.case_id, r.repetition, v) for r in got if r.ok
             and (v := r.value(objective)) is not None and not stats.usable(v)]
    line = f"{sum(r.ok for r in got)} of {len(got)} ok"
    if aside:
        line += (f"; {objective}: {stats.set_aside_text([v for *_, v in aside])}, in no mean: "
                 + ", ".join(f"{cid} rep {rep}" for cid, rep, _v in aside))
    return line
