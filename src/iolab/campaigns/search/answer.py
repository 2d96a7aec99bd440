"""A search's answer: the best setting found with its interval, the runner-up and Welch's test
between them, the cases that cannot be told apart from the best, the cases not run that the
model cannot rule out, and the model's optimum; from the records and the experiment as run
(of_run). Printed by present/search.py."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ... import stats
from ...errors import IolabError
from ...experiment.load import Search
from ...experiment.matrix import Case
from ...results.record import Record
from .observations import Point, observe
from .space import GRID, PART, Space
from .strategies import design, indistinguishable


@dataclass
class Answer:
    """What a search found: the best setting with its interval, the runner-up and whether the two
    can be told apart, and where the model puts the optimum (iolab search-report)."""

    search: Search
    grid: int                       # cases in the grid
    cases_run: int                  # cases asked for
    jobs: int                       # jobs recorded (any status)
    ranked: list[Point]             # points on the grid with values, best first
    off_grid: list[Point]           # settings in effect that are on no case of the grid
    no_value: list[str]             # cases asked for that gave no value (failed, skipped)
    welch: object | None = None     # stats.Welch of the best against the runner-up
    predicted: tuple | None = None  # (Case, predicted value) where the model differs
    set_aside: list[tuple] = field(default_factory=list)    # State.set_aside
    indistinguishable: list[Point] = field(default_factory=list)    # overlap the best (separated)
    not_ruled_out: list[Unmeasured] = field(default_factory=list)   # not run; could be as good
    not_run: int = 0                # cases of the grid never asked for (ruled out or not)

    @property
    def best(self) -> Point | None:
        return self.ranked[0] if self.ranked else None

    @property
    def runner_up(self) -> Point | None:
        return self.ranked[1] if len(self.ranked) > 1 else None


def answer(search: Search, space: Space, records: list[Record]) -> Answer:
    state = observe(space, records, search.objective)
    sign = -1 if search.maximize else 1
    ranked = sorted((p for p in state.points if p.case is not None and p.values),
                    key=lambda p: (sign * p.mean, -len(p.values)))
    valued = {cid for p in state.points for cid in p.requested}
    out = Answer(search, len(space.cases), len(state.spent), state.jobs, ranked,
                 [p for p in state.points if p.case is None],
                 [cid for cid in state.spent if cid not in valued], set_aside=state.set_aside)
    out.indistinguishable = indistinguishable(ranked, search.maximize)
    unrun = [c for c in space.cases if c.case_id not in state.spent
             and c.case_id not in {p.case.case_id for p in ranked}]
    out.not_run = len(unrun)
    out.not_ruled_out = not_ruled_out(space, ranked, unrun, search.maximize)
    if len(ranked) > 1:
        out.welch = stats.welch(stats.summarize(ranked[1].values), stats.summarize(ranked[0].values))
    model = predict(space, ranked)
    if model:
        top = (max if search.maximize else min)(model, key=lambda t: t[1])
        if ranked and top[0] is not ranked[0].case:
            out.predicted = top
    return out


def covers(a: Answer, case_id: str) -> bool:
    """Whether a's report leaves `case_id` possibly the best: it is a's best, a case run that
    a's report calls indistinguishable from it, or a case not run that a's model cannot rule out."""
    if a.best is None:
        return False
    return (case_id == a.best.case.case_id
            or case_id in {p.case.case_id for p in a.indistinguishable}
            or case_id in {u.case.case_id for u in a.not_ruled_out})


def same(a: Answer, b: Answer) -> bool:
    """Whether two searches name the same best case (or both found nothing)."""
    if a.best is None or b.best is None:
        return a.best is None and b.best is None
    return a.best.case.case_id == b.best.case.case_id


def agree(a: Answer, b: Answer) -> bool:
    """Whether two searches of one grid give answers that do not contradict each other (what two
    seeds must do on noise): the same answer, or one the other's report leaves possibly the best
    (`covers`: its best, indistinguishable from it, or not run and not ruled out). They
    contradict only when each report excludes the other's answer; one report that cannot tell
    the other's answer from its own best says only that it knows less (the other may have
    separated its answer with more values)."""
    if a.best is None or b.best is None:
        return a.best is None and b.best is None
    return same(a, b) or covers(a, b.best.case.case_id) or covers(b, a.best.case.case_id)


@dataclass
class Unmeasured:
    """A case of the grid the search never ran, with what the report's model says of it: its
    predicted mean and 95% prediction interval, or why the model cannot predict it (`why`)."""

    case: Case
    predicted: float | None = None
    interval: tuple | None = None
    why: str = ""
    on: list[tuple] = field(default_factory=list)   # the axis values `why` is about (key, value)

    def reason(self, show=lambda _bench, _key, value: value) -> str:
        """`why` in words, the axis values shown with `show(benchmark, key, value)`."""
        if not self.on:
            return self.why
        return self.why + " " + ", ".join(
            f"{k}={v if k == PART else show(self.case.benchmark, k, v)}" for k, v in self.on)


def not_ruled_out(space: Space, ranked: list[Point], unrun: list[Case],
                  maximize: bool) -> list[Unmeasured]:
    """The cases not run (`unrun`) that the cases run cannot rule out, best predicted first: a
    main-effects model (as `predict`) fitted to the means of the cases run gives each a 95%
    prediction interval (t with the fit's residual degrees of freedom, its residual spread, the
    case's leverage); a case is ruled out only when that interval stays on the worse side of the
    best's 95% interval (its mean when it has one value). The model cannot rule anything out
    below 3 cases run, when it fits them exactly (no residual to size its error by), or for a
    case whose prediction the cases run do not determine: an axis value none of them had, or
    one measured in a single value (its effect rests on one value, and the residual spread of
    the other cases says nothing of that value's own noise)."""
    import numpy as np

    if not unrun or not ranked:
        return []
    best = stats.summarize(ranked[0].values)
    bound = best.mean if best.ci is None else (best.ci[0] if maximize else best.ci[1])
    row, _ = design(space)
    if len(ranked) < 3:
        return [Unmeasured(c, why=f"{len(ranked)} case(s) run: too few for the model")
                for c in unrun]
    x = np.array([row(p.setting) for p in ranked])
    y = np.array([p.mean for p in ranked])
    pinv = np.linalg.pinv(x)
    coef = pinv @ y
    dof = len(ranked) - int(np.linalg.matrix_rank(x))
    resid = y - x @ coef
    exact = dof < 1 or not float(resid @ resid) > 0
    s = 0.0 if exact else math.sqrt(float(resid @ resid) / dof)
    t = 0.0 if exact else stats.t_quantile(dof)
    seen: dict[tuple, int] = {}     # (axis, value index) -> values measured with it
    for p in ranked:
        for at in enumerate(space.coords(p.setting)):
            seen[at] = seen.get(at, 0) + len(p.values)

    def named(i: int, j: int) -> tuple:
        return space.axes[i], space.values[space.axes[i]][j]

    out = []
    for c in unrun:
        r = row(space.setting(c))
        at = list(enumerate(space.coords(space.setting(c))))
        unseen = [named(*a) for a in at if a not in seen]
        once = [named(*a) for a in at if seen.get(a) == 1]
        if unseen:
            out.append(Unmeasured(c, why="no case run had", on=unseen))
            continue
        if once:        # its effect rests on one value: no spread of its own to judge it by
            out.append(Unmeasured(c, why="one value only was measured with", on=once))
            continue
        if exact:
            out.append(Unmeasured(c, why=f"the model fits the {len(ranked)} cases run exactly: "
                                  "nothing to size its error by"))
            continue
        if float(np.abs(r - r @ pinv @ x).max()) > 1e-8:
            out.append(Unmeasured(c, why="the cases run do not determine its prediction"))
            continue
        mean = float(r @ coef)
        half = t * s * math.sqrt(1.0 + float(np.sum((r @ pinv) ** 2)))
        if (mean + half >= bound) if maximize else (mean - half <= bound):
            out.append(Unmeasured(c, mean, (mean - half, mean + half)))
    sign = -1 if maximize else 1
    return sorted(out, key=lambda u: (u.predicted is None,
                                      sign * u.predicted if u.predicted is not None else 0))


def of_run(run, objective: str | None = None) -> tuple[Search, Space, str]:
    """The search a run asked for (or, with `objective`, a search for it over the grid the run
    ran), its space, and the objective's unit as recorded."""
    from ...benchmarks import get as get_benchmark
    from ...experiment.matrix import expand

    from ...results import asrun

    made = asrun.of(run)
    exp = made.experiment
    if exp is None:
        raise IolabError(f"run {run.run_id}: the experiment as run does not load: {made.why_not}")
    search = exp.search
    if objective is not None or search is None:
        if objective is None:
            raise IolabError(f"{exp.id} as run (run {run.run_id}) has no search: section",
                             hint="give --objective METRIC to find the best case of the grid it ran")
        better = {get_benchmark(p.benchmark).metric(objective) for p in exp.parts}
        if None in better:
            raise IolabError(f"{objective!r} is not a metric of {', '.join(exp.benchmarks)}")
        sides = {m.better for m in better}
        if len(sides) != 1 or None in sides:
            raise IolabError(f"{objective} is not better higher or lower by itself: nothing to "
                             "optimise")
        direction = "max" if sides.pop() == "higher" else "min"
        if search is None:
            search = Search(objective, direction, budget=0, strategy=GRID,
                            repetitions=exp.repetitions)
        else:
            search = Search(objective, direction, search.budget, search.strategy,
                            search.repetitions, search.seed, search.initial)
    space = Space.of(expand(exp))
    unit = next((f" {m.unit}" for r in run.records for m in r.metrics
                 if m.name == search.objective and m.unit), "")
    return search, space, unit


def is_search_run(run) -> bool:
    """Whether a run (its chain's first) is a search's: `iolab search` made it (a plain
    `reframe -r` of an experiment with `search:` runs the whole grid, and is not)."""
    return run.manifest.get("search_round") is not None


def predict(space: Space, points: list[Point]) -> list[tuple] | None:
    """The model of the report: each axis value adds its own effect (main effects, least squares
    over the means of the cases run); (case, predicted value) for every case of the grid. None
    below 3 cases run: too few to say anything."""
    import numpy as np

    if len(points) < 3:
        return None
    row, _ = design(space)
    x = np.array([row(p.setting) for p in points])
    y = np.array([p.mean for p in points])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return [(c, float(row(space.setting(c)) @ coef)) for c in space.cases]


def space_bench(space: Space, p: Point) -> str:
    return next(c.benchmark for c in space.cases if c.case_id in p.requested)
