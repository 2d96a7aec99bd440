"""Budgeted adaptive search over an experiment's grid (`search:` in the YAML).

The matrix defines the space: `matrix.expand` gives the grid, and every case is one point of it,
named by its case id. A strategy reads the records so far and proposes the next jobs
((part, case_id, repetition), as `iolab resume` runs them) until the budget is spent:

- `random`: the grid in an order drawn from the seed, every case with `repetitions`;
- `model` (the default) and `bayes`: explore with one repetition per new case and give the best
  setting so far its other repetitions (so the answer has an interval), within budget x
  repetitions jobs. New cases: `initial` in that random order, then those a model rates best:
  `model`, a main-effects model (each axis value its own effect, ridge least squares, with a
  bonus for axis values seen little), every other new case one next to the best (`neighbours`:
  the model is blind to how axes interact); `bayes`, Optuna's TPE sampler (multivariate) over
  the axes (numbers as ordered integer indexes, anything else categorical). On a tiny grid (no
  more cases than the model has effects) whose budget can run every case once, every case runs
  once before the best is confirmed (`sweeps`). Before answering,
  the cases whose 95% intervals overlap the best's are measured again (repetitions beyond
  `repetitions`, with a quarter of the jobs kept for it: `reserve`) until none overlaps or the
  budget is spent; the answer names those still overlapping (`indistinguishable`);
- `halving`: successive halving over repetitions: many cases with one repetition, the better
  half gets twice as many, and so on up to `repetitions`.

The same seed and records give the same proposals: nothing else is random, and the model (or
the Optuna study) is rebuilt from the records each time (so a search resumes from its records alone).
"""

from __future__ import annotations

import math
import random
import warnings

from ... import stats
from ...errors import IolabError
from ...experiment.load import Search
from ...experiment.matrix import Case
from ...results.record import Record
from .observations import Point, State, observe
from .space import Space


EXPLORE_CONFIRM = ("model", "bayes")    # one repetition per new case, the rest for the leader


def _optuna():
    """Optuna (the `search` extra), or an error that says how to install it."""
    try:
        import optuna
    except ImportError:
        raise IolabError("strategy bayes needs Optuna, which is not installed",
                         hint="pip install 'iolab[search]' (or choose strategy model, random or "
                         "halving)") from None
    return optuna


def order(space: Space, seed: int) -> list[Case]:
    """The grid in the random order of `seed` (random search, and bayes' first cases)."""
    cases = list(space.cases)
    random.Random(seed).shuffle(cases)
    return cases


def propose(search: Search, space: Space, records: list[Record], n: int = 1) -> list[tuple]:
    """The next jobs (part, case_id, repetition), at most `n` cases' worth (halving: one rung's
    missing jobs); [] when the budget is spent or every case has run."""
    state = observe(space, records, search.objective)
    if search.strategy == "halving":
        return _halving(search, space, state)
    if search.strategy in EXPLORE_CONFIRM:
        return _explore_confirm(search, space, state, n)
    # a case begun and not finished (an interrupted round) is finished first
    ids = {c.case_id: c for c in space.cases}
    begun = [(ids[cid], [r for r in range(1, search.repetitions + 1) if r not in reps])
             for cid, reps in state.spent.items()]
    begun = [(c, missing) for c, missing in begun if missing][:n]
    if begun:
        return [(c.part, c.case_id, r) for c, missing in begun for r in missing]
    room = min(n, search.budget - len(state.spent), len(space.cases) - len(state.spent))
    if room <= 0:
        return []
    if search.strategy == "random" or len(state.spent) < search.initial:
        fresh = [c for c in order(space, search.seed) if c.case_id not in state.spent]
        take = room if search.strategy == "random" else min(room, search.initial - len(state.spent))
        chosen = fresh[:take]
    else:
        chosen = []
    if len(chosen) < room and search.strategy == "bayes":
        chosen += _tpe(search, space, state, room - len(chosen), {c.case_id for c in chosen})
    return [(c.part, c.case_id, rep) for c in chosen for rep in range(1, search.repetitions + 1)]


def _explore_confirm(search: Search, space: Space, state: State, n: int) -> list[tuple]:
    """model and bayes: explore with one repetition per case, confirm the leader with the rest;
    at most n cases' worth of jobs, within budget x repetitions jobs in all.

    In this order: a case with some but not all its repetitions beyond the first (a confirmation
    cut short) is finished; the best setting so far, if it has fewer values than `repetitions`,
    gets the missing ones (so the answer has an interval); then new cases, one repetition each:
    `initial` in the seed's random order, then the model's (model: _main_effects; bayes: Optuna's
    TPE). A new case is proposed only while the
    budget keeps room to confirm it and the reserve (`reserve`). Then, while a case's interval
    overlaps the best's (`indistinguishable`): those with fewer than `repetitions` get theirs,
    then the best and they get one more each (repetitions `repetitions` + 1, ...), the one
    with the fewest values first. Once the best stands apart, the rest of the budget explores
    (next to the best first); when no new case fits, the next best get their missing
    repetitions (the runner-up: so that Welch can tell the two apart)."""
    plan = _Proposal(search, space, state, n)
    reps, ids = search.repetitions, {c.case_id: c for c in space.cases}
    for cid, got in state.spent.items():
        if 1 < len(got) < reps:
            plan.add(ids[cid], plan.missing(ids[cid], reps))
    sign = -1 if search.maximize else 1
    ranked = sorted((p for p in state.points if p.case is not None and p.values),
                    key=lambda p: (sign * p.mean, -len(p.values)))
    fresh = [c for c in space.cases if c.case_id not in state.spent and c.case_id not in plan.taken]
    sweep = sweeps(search, space) and fresh
    if ranked and len(ranked[0].values) < reps and not sweep:
        plan.add(ranked[0].case, plan.missing(ranked[0].case, reps - len(ranked[0].values)))
    if len(plan.taken) >= n:
        return plan.jobs
    fresh = [c for c in fresh if c.case_id not in plan.taken]

    # new cases while the budget keeps room to confirm them and the reserve to separate the best
    room = min(n - len(plan.taken), len(fresh), max(0, plan.left - reserve(search)) // reps)
    if sweep:       # a tiny grid: every case once first, keeping the room to confirm the best
        room = min(n - len(plan.taken), len(fresh), max(0, plan.left - (reps - 1)))
    if room > 0:    # after the random start, every other new case is one next to the best
        plan.explore(ranked, room,
                     near_first=len(state.spent) >= search.initial and len(state.spent) % 2 == 0)
        return plan.jobs
    _separate_or_finish(plan, ranked, fresh)
    return plan.jobs


class _Proposal:
    """The jobs one call of _explore_confirm proposes: at most n cases, within the budget left."""

    def __init__(self, search: Search, space: Space, state: State, n: int):
        self.search, self.space, self.state, self.n = search, space, state, n
        self.left = search.budget * search.repetitions - state.jobs
        self.jobs: list[tuple] = []
        self.taken: set[str] = set()

    def add(self, case: Case, missing: list[int]) -> None:
        missing = missing[:max(0, self.left)]
        if missing and len(self.taken) < self.n and case.case_id not in self.taken:
            self.jobs.extend((case.part, case.case_id, r) for r in missing)
            self.taken.add(case.case_id)
            self.left -= len(missing)

    def missing(self, case: Case, want: int) -> list[int]:
        got = self.state.spent.get(case.case_id, set())
        return [r for r in range(1, self.search.repetitions + 1) if r not in got][:want]

    def explore(self, ranked: list, room: int, near_first: bool = False) -> None:
        """`room` new cases, one repetition each: the seed's random start, then (near_first)
        the best's neighbours as the model rates them, then the strategy's picks."""
        search, space, state, taken = self.search, self.space, self.state, self.taken
        chosen = []
        if len(state.spent) < search.initial:
            chosen = [c for c in order(space, search.seed) if c.case_id not in state.spent
                      and c.case_id not in taken][:min(room, search.initial - len(state.spent))]
        if len(chosen) < room and ranked and near_first:
            near = neighbours(space, ranked[0].case, set(state.spent) | taken)
            if near:        # the best's neighbours not run yet, as the model rates them
                chosen += _main_effects(search, space, state, room - len(chosen),
                                        taken | {c.case_id for c in chosen}, among=near)
        if len(chosen) < room:
            pick = _main_effects if search.strategy == "model" else _tpe
            chosen += pick(search, space, state, room - len(chosen),
                           taken | {c.case_id for c in chosen})
        for c in chosen:
            self.add(c, [1])


def _separate_or_finish(plan: _Proposal, ranked: list, fresh: list) -> None:
    """No room for new cases: separate the best from its contenders, else let the reserve
    explore next to the best, else give the next best their missing repetitions."""
    search, reps = plan.search, plan.search.repetitions
    contenders = indistinguishable(ranked, search.maximize)
    if contenders and len(ranked[0].values) >= reps:
        # separate the best: each contender gets its repetitions (an interval), then the best
        # and its contenders one more repetition each, the one with the fewest values first
        for p in contenders:
            if len(p.values) < reps:
                plan.add(p.case, plan.missing(p.case, reps - len(p.values)))
        for p in sorted([ranked[0]] + contenders, key=lambda p: len(p.values)):
            got = plan.state.spent.get(p.case.case_id, set())
            plan.add(p.case, [max(got | {len(p.values)}) + 1])
        return
    room = min(plan.n - len(plan.taken), len(fresh), plan.left // reps)
    if room > 0:            # the best stands apart: the reserve explores, next to it first
        plan.explore(ranked, room, near_first=True)
    elif not fresh or plan.left < reps:
        for p in ranked[1:]:
            if len(p.values) < reps:
                plan.add(p.case, plan.missing(p.case, reps - len(p.values)))


def sweeps(search: Search, space: Space) -> bool:
    """Whether a model or bayes search runs every case once before confirming anything: on a
    tiny grid, one with no more cases than the main-effects model has effects (1 + each axis's
    values but one), where a model fitted to the cases run fits them exactly until all have run
    and so can rule out none of the others; when the budget can run each once and still confirm
    the best (budget x repetitions >= cases + repetitions - 1)."""
    effects = 1 + sum(len(space.values[k]) - 1 for k in space.axes)
    return (len(space.cases) <= effects
            and search.budget * search.repetitions >= len(space.cases) + search.repetitions - 1)


SEPARATE = 0.25     # of a search's jobs kept to re-measure the cases that overlap the best


def reserve(search: Search) -> int:
    """Jobs of the budget kept, while new cases are explored, to re-measure the cases whose
    intervals overlap the best's (model and bayes): a quarter of budget x repetitions, at least
    one case's repetitions when the budget has room for more than two cases."""
    jobs = search.budget * search.repetitions
    if search.repetitions < 2 or search.budget < 3:
        return 0
    return max(search.repetitions, int(SEPARATE * jobs))


def separated(best: Point, other: Point, maximize: bool) -> bool:
    """Whether `other` is told apart from `best` by their 95% intervals: the two do not overlap.
    A point with one value has no interval of its own: it is given the best's half-width (as
    noisy as the best); the best with fewer than two values is told apart from nothing."""
    b = stats.summarize(best.values)
    if b.ci is None:
        return False
    o = stats.summarize(other.values)
    lo, hi = o.ci if o.ci is not None else (o.mean - b.ci_half_width, o.mean + b.ci_half_width)
    return hi < b.ci[0] if maximize else lo > b.ci[1]


def indistinguishable(ranked: list[Point], maximize: bool) -> list[Point]:
    """The points (best first, as `ranked`) that cannot be told apart from the best, `ranked[0]`."""
    return [p for p in ranked[1:] if not separated(ranked[0], p, maximize)] if ranked else []


def neighbours(space: Space, case: Case, spent: set) -> list[Case]:
    """The cases one step from `case` on one axis (the next value up or down of an ordered axis,
    any other value of the others), not in `spent`: where a main-effects model, blind to how axes
    interact, can miss a better case next to the best."""
    at = space.coords(space.setting(case))
    out = []
    for c in space.cases:
        if c.case_id in spent:
            continue
        other = space.coords(space.setting(c))
        diff = [i for i in range(len(at)) if at[i] != other[i]]
        if len(diff) == 1 and (not space.ordered[space.axes[diff[0]]]
                               or abs(at[diff[0]] - other[diff[0]]) == 1):
            out.append(c)
    return out


def design(space: Space, intercept: bool = True):
    """The main-effects model's design: a setting's row, one column per axis value (1 where the
    setting has it), after a column of ones with `intercept`; and the number of columns."""
    import numpy as np

    columns = [(i, j) for i, k in enumerate(space.axes) for j in range(len(space.values[k]))]
    lead = [1.0] if intercept else []

    def row(setting) -> np.ndarray:
        at = space.coords(setting)
        return np.array(lead + [1.0 if at[i] == j else 0.0 for i, j in columns])
    return row, len(lead) + len(columns)


def _main_effects(search: Search, space: Space, state: State, n: int, taken: set,
                  among: list[Case] | None = None) -> list[Case]:
    """n cases the main-effects model rates best: each axis value adds its own effect (ridge
    least squares over the means on the grid so far, each weighted by its number of values, on
    standardised values, penalty 1), plus an exploration bonus for axis values seen little
    (the mean over the axes of 1 / sqrt(1 + values seen at that axis value), in standard
    deviations). Ties go to the seed's order. Deterministic: nothing here draws at random."""
    import numpy as np

    points = [p for p in state.points if p.case is not None and p.values]
    free = [c for c in (space.cases if among is None else among)
            if c.case_id not in state.spent and c.case_id not in taken]
    row, ncols = design(space, intercept=False)
    x = np.array([row(p.setting) for p in points]).reshape(len(points), ncols)
    y = np.array([p.mean if search.maximize else -p.mean for p in points])
    w = np.array([float(len(p.values)) for p in points])
    coef = np.zeros(ncols)
    if len(points):
        spread = float(np.std(y)) or 1.0
        z = (y - float(np.average(y, weights=w))) / spread
        coef = np.linalg.solve(x.T @ (x * w[:, None]) + np.eye(ncols), x.T @ (w * z))
    seen = x.T @ w if len(points) else np.zeros(ncols)
    bonus = 1.0 / np.sqrt(1.0 + seen) / max(1, len(space.axes))
    rank = {c.case_id: i for i, c in enumerate(order(space, search.seed))}

    def score(case: Case) -> float:
        r = row(space.setting(case))
        return float(r @ coef + r @ bonus)

    return sorted(free, key=lambda c: (-score(c), rank[c.case_id]))[:n]


def _distributions(space: Space) -> dict:
    _optuna()
    from optuna.distributions import CategoricalDistribution, IntDistribution

    return {f"x{i}": (IntDistribution(0, len(space.values[k]) - 1) if space.ordered[k]
                      else CategoricalDistribution(list(range(len(space.values[k])))))
            for i, k in enumerate(space.axes)}


def _study(search: Search, space: Space, state: State, seed: int):
    optuna = _optuna()
    from optuna.trial import TrialState, create_trial

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        sampler = optuna.samplers.TPESampler(seed=seed, n_startup_trials=0, multivariate=True,
                                             group=False)
    study = optuna.create_study(direction="maximize" if search.maximize else "minimize",
                                sampler=sampler)
    dists = _distributions(space)
    told = set()
    for p in state.points:
        if p.case is None:
            continue
        at = space.coords(p.setting)
        study.add_trial(create_trial(params=dict(zip(dists, at)), distributions=dists,
                                     value=p.mean))
        told.update(p.requested)
    for cid in state.spent:        # asked for, but no value on the grid: failed, or off the grid
        if cid not in told:
            case = next(c for c in space.cases if c.case_id == cid)
            study.add_trial(create_trial(params=dict(zip(dists, space.coords(space.setting(case)))),
                                         distributions=dists, state=TrialState.FAIL))
    return study, dists


def _tpe(search: Search, space: Space, state: State, n: int, taken: set) -> list[Case]:
    """n cases from TPE: each proposal goes to the nearest case not run yet (a proposal may be
    an excluded point, or one already run); a batch lies (median value) about its picks so
    that the next one goes elsewhere."""
    optuna = _optuna()
    from optuna.trial import TrialState, create_trial

    study, dists = _study(search, space, state, search.seed + 1 + len(state.spent))
    done = set(state.spent) | set(taken)
    means = sorted(p.mean for p in state.points if p.case is not None and p.values)
    lie = means[len(means) // 2] if means else None
    chosen = []
    for _ in range(n):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            trial = study.ask(dists)
        at = tuple(trial.params[name] for name in dists)
        study.tell(trial, state=TrialState.FAIL)
        free = [(space.distance(at, space.coords(space.setting(c))), i, c)
                for i, c in enumerate(space.cases) if c.case_id not in done]
        if not free:
            break
        case = min(free, key=lambda t: t[:2])[2]
        chosen.append(case)
        done.add(case.case_id)
        params = dict(zip(dists, space.coords(space.setting(case))))
        study.add_trial(create_trial(params=params, distributions=dists, value=lie)
                        if lie is not None else
                        create_trial(params=params, distributions=dists, state=TrialState.FAIL))
    return chosen


def drive(search: Search, space: Space, measure, records=(), batch: int = 1,
          rounds: int | None = None, on_spent=None) -> list[Record]:
    """The search's loop, the one `iolab search` runs (run_search): rounds until the budget is
    spent (then `on_spent(records)`) or `rounds` rounds ran. A round proposes jobs from the
    records so far; `measure(jobs, records)` -> the records to go on from (those so far and the
    round's), or None to stop (a dry run). Starts from `records` (a search resumes from what it
    has); returns the records."""
    records = list(records)
    done = 0
    while rounds is None or done < rounds:
        jobs = propose(search, space, records, batch)
        if not jobs:
            if on_spent:
                on_spent(records)
            return records
        after = measure(jobs, records)
        if after is None:
            return records
        if len(after) <= len(records):
            raise IolabError(f"the search's round of {len(jobs)} jobs gave no records: stopped")
        records = list(after)
        done += 1
    return records


def rungs(search: Search, grid: int) -> list[tuple[int, int]]:
    """(cases, repetitions) per rung: repetitions 1, 2, 4, ... up to search.repetitions, half the
    cases each time; as many first-rung cases as the budget (budget x repetitions jobs) allows."""
    reps = []
    r = 1
    while r < search.repetitions:
        reps.append(r)
        r *= 2
    reps.append(search.repetitions)
    jobs = search.budget * search.repetitions

    def plan(n0):
        return [(max(1, math.ceil(n0 / 2 ** k)), r) for k, r in enumerate(reps)]

    def cost(rungs):    # a case promoted keeps its repetitions: it runs only the new ones
        return sum(n * (r - (rungs[k - 1][1] if k else 0)) for k, (n, r) in enumerate(rungs))

    n0 = 1
    while n0 < grid and cost(plan(n0 + 1)) <= jobs:
        n0 += 1
    return plan(n0)


def _halving(search: Search, space: Space, state: State) -> list[tuple]:
    """The missing jobs of the first rung that is not complete."""
    members = order(space, search.seed)[:rungs(search, len(space.cases))[0][0]]
    for k, (n, reps) in enumerate(rungs(search, len(space.cases))):
        if k:
            # the better part of the previous rung, by the mean of what each case gave
            scored = [(state.values_by_request.get(c.case_id), i, c) for i, c in enumerate(members)]
            sign = -1 if search.maximize else 1
            scored.sort(key=lambda t: (t[0] is None, sign * _mean(t[0]) if t[0] else 0, t[1]))
            members = [c for *_, c in scored[:n]]
        missing = [(c.part, c.case_id, rep) for c in members for rep in range(1, reps + 1)
                   if rep not in state.spent.get(c.case_id, set())]
        if missing:
            return missing
    return []


def _mean(xs) -> float:
    return math.fsum(xs) / len(xs)
