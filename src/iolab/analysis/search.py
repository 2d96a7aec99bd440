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

Records count as what was applied, never as what was asked for: a case whose striping was not
applied, or whose MPI-IO hints the library lowered, is an observation of the setting that was in
effect. If that setting is another case of the grid, the value is that case's; if it is on no
case of the grid (striping not applied: the directory's default layout), it is kept apart
(`Point.case` None) and the case asked for counts as spent and tells the model nothing.
"""

from __future__ import annotations

import math
import random
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from .. import stats
from ..errors import IolabError
from ..experiment.load import Search
from ..experiment.matrix import Case
from ..results.record import Record

NOT_APPLIED = "not applied"
EXPLORE_CONFIRM = ("model", "bayes")    # one repetition per new case, the rest for the leader
PART = "part"           # the pseudo-axis of an experiment with several parts
GRID = "grid"           # Answer.search.strategy of a run that asked for the whole grid


# ------------------------------------------------------------------------------------ space

def _ordered(values) -> bool:
    return all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)


@dataclass
class Space:
    """The grid as axes: each varied key with its values (numbers sorted, others as first seen)."""

    cases: list[Case]
    axes: list[str]
    values: dict[str, list]
    ordered: dict[str, bool]
    by_coords: dict[tuple, Case] = field(repr=False, default_factory=dict)

    @classmethod
    def of(cls, cases: list[Case]) -> Space:
        if not cases:
            raise IolabError("the search has no cases: the matrix (after exclude) is empty")
        keys: list[str] = [PART] if len({c.part for c in cases}) > 1 else []
        seen: dict[str, list] = {}
        for c in cases:
            for k, v in c.params.items():
                if v not in seen.setdefault(k, []):
                    seen[k].append(v)
        keys += [k for k, vs in seen.items() if len(vs) > 1 or any(k not in c.params for c in cases)]
        values, ordered = {}, {}
        for k in keys:
            vs = list(dict.fromkeys(_value(c, k) for c in cases))
            ordered[k] = _ordered(vs)
            values[k] = sorted(vs) if ordered[k] else vs
        space = cls(list(cases), keys, values, ordered)
        for c in cases:
            space.by_coords.setdefault(space.coords({k: _value(c, k) for k in keys}), c)
        return space

    def coords(self, setting: dict) -> tuple | None:
        """Index of each axis value, or None when a value is on no axis (off the grid)."""
        out = []
        for k in self.axes:
            try:
                out.append(self.values[k].index(setting.get(k)))
            except ValueError:
                return None
        return tuple(out)

    def setting(self, case: Case) -> dict:
        return {k: _value(case, k) for k in self.axes}

    def case_for(self, setting: dict) -> Case | None:
        at = self.coords(setting)
        return None if at is None else self.by_coords.get(at)

    def distance(self, a: tuple, b: tuple) -> float:
        d = 0.0
        for i, k in enumerate(self.axes):
            n = len(self.values[k])
            d += abs(a[i] - b[i]) / max(1, n - 1) if self.ordered[k] else float(a[i] != b[i])
        return d


def _value(case: Case, key: str):
    return case.part if key == PART else case.params.get(key)


# ----------------------------------------------------------------------------- observations

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


# -------------------------------------------------------------------------------- proposals

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
    reps = search.repetitions
    ids = {c.case_id: c for c in space.cases}
    left = search.budget * reps - state.jobs
    jobs: list[tuple] = []
    taken: set[str] = set()

    def add(case: Case, missing: list[int]) -> None:
        nonlocal left
        missing = missing[:max(0, left)]
        if missing and len(taken) < n and case.case_id not in taken:
            jobs.extend((case.part, case.case_id, r) for r in missing)
            taken.add(case.case_id)
            left -= len(missing)

    def missing(case: Case, want: int) -> list[int]:
        got = state.spent.get(case.case_id, set())
        return [r for r in range(1, reps + 1) if r not in got][:want]

    for cid, got in state.spent.items():
        if 1 < len(got) < reps:
            add(ids[cid], missing(ids[cid], reps))
    sign = -1 if search.maximize else 1
    ranked = sorted((p for p in state.points if p.case is not None and p.values),
                    key=lambda p: (sign * p.mean, -len(p.values)))
    fresh = [c for c in space.cases if c.case_id not in state.spent and c.case_id not in taken]
    sweep = sweeps(search, space) and fresh
    if ranked and len(ranked[0].values) < reps and not sweep:
        add(ranked[0].case, missing(ranked[0].case, reps - len(ranked[0].values)))
    if len(taken) >= n:
        return jobs
    fresh = [c for c in fresh if c.case_id not in taken]

    def explore(room: int, near_first: bool = False) -> None:
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
            add(c, [1])

    # new cases while the budget keeps room to confirm them and the reserve to separate the best
    room = min(n - len(taken), len(fresh), max(0, left - reserve(search)) // reps)
    if sweep:       # a tiny grid: every case once first, keeping the room to confirm the best
        room = min(n - len(taken), len(fresh), max(0, left - (reps - 1)))
    if room > 0:    # after the random start, every other new case is one next to the best
        explore(room, near_first=len(state.spent) >= search.initial and len(state.spent) % 2 == 0)
        return jobs
    contenders = indistinguishable(ranked, search.maximize)
    if contenders and len(ranked[0].values) >= reps:
        # separate the best: each contender gets its repetitions (an interval), then the best
        # and its contenders one more repetition each, the one with the fewest values first
        for p in contenders:
            if len(p.values) < reps:
                add(p.case, missing(p.case, reps - len(p.values)))
        for p in sorted([ranked[0]] + contenders, key=lambda p: len(p.values)):
            got = state.spent.get(p.case.case_id, set())
            add(p.case, [max(got | {len(p.values)}) + 1])
        return jobs
    room = min(n - len(taken), len(fresh), left // reps)
    if room > 0:            # the best stands apart: the reserve explores, next to it first
        explore(room, near_first=True)
    elif not fresh or left < reps:
        for p in ranked[1:]:
            if len(p.values) < reps:
                add(p.case, missing(p.case, reps - len(p.values)))
    return jobs


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


def _design(space: Space, intercept: bool = True):
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
    row, ncols = _design(space, intercept=False)
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


# -------------------------------------------------------------------------------- halving

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


# ---------------------------------------------------------------------------------- answer

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
    row, _ = _design(space)
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


def report_run(run, objective: str | None = None) -> tuple[str, bool]:
    """`iolab search-report`: the answer of a run (with its continuations), from its records and
    the experiment as run, and whether it found anything. A run without `search:` (a full grid)
    is answered for `objective`."""
    search, space, unit = of_run(run, objective)
    head = f"{run.experiment.id} run {run.run_id}" + (f" (+{len(run.chain) - 1} continuations)"
                                                      if len(run.chain) > 1 else "")
    found = answer(search, space, run.records)
    return head + "\n" + render_answer(found, space, unit), found.best is not None


def of_run(run, objective: str | None = None) -> tuple[Search, Space, str]:
    """The search a run asked for (or, with `objective`, a search for it over the grid the run
    ran), its space, and the objective's unit as recorded."""
    from ..benchmarks import get as get_benchmark
    from ..experiment.matrix import expand

    exp = run.experiment
    if exp is None:
        raise IolabError(f"run {run.run_id}: the experiment as run does not load: {run._loaded[1]}")
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
    row, _ = _design(space)
    x = np.array([row(p.setting) for p in points])
    y = np.array([p.mean for p in points])
    coef, *_ = np.linalg.lstsq(x, y, rcond=None)
    return [(c, float(row(space.setting(c)) @ coef)) for c in space.cases]


def render_answer(a: Answer, space: Space, unit: str = "") -> str:
    from ..experiment.matrix import show_value

    s = a.search
    keys = [k for k in space.axes if k != PART] + ([PART] if PART in space.axes else [])

    def setting(p_setting: dict, bench: str) -> str:
        return ", ".join(f"{k}={show_value(bench, k, v) if v != NOT_APPLIED else v}"
                         for k, v in ((k, p_setting.get(k)) for k in keys)) or "(one case)"

    def shown(p: Point) -> str:
        m = stats.summarize(p.values)
        ci = (f" ± {m.ci_half_width:.4g} (95% CI {m.ci[0]:.4g} to {m.ci[1]:.4g})"
              if m.ci else " (n too small for an interval)")
        return f"{setting(p.setting, p.case.benchmark)}\n    {s.objective} {m.mean:.4g}{unit}{ci}, n={m.n}"

    budget = (f"budget {s.budget} cases x {s.repetitions} repetitions" if s.strategy == "random"
              else f"budget {s.budget} x {s.repetitions} repetitions = {s.budget * s.repetitions} jobs")
    lines = [f"search: {s.strategy}, {s.direction} {s.objective}, {budget}, seed {s.seed}"
             if s.strategy != GRID else
             f"search: none (the run asked for the grid); {s.direction} {s.objective}",
             f"cases run: {a.cases_run} of the grid's {a.grid} ({a.jobs} jobs; the grid: "
             f"{a.grid * s.repetitions})"]
    if a.best is None:
        lines.append(f"no case of the grid gave a value of {s.objective}: nothing found")
    else:
        lines.append(f"best found: {shown(a.best)}")
        lines += [f"    (asked for {', '.join(a.best.requested)}: {n})" for n in a.best.notes]
    if a.runner_up is not None:
        lines.append(f"runner-up: {shown(a.runner_up)}")
        w = a.welch
        if w is None:
            lines.append("best vs runner-up: n too small for Welch's test (2 values each needed)")
        elif w.p < stats.ALPHA:
            lines.append(f"best vs runner-up: distinguishable (Welch p={w.p:.3g} < {stats.ALPHA})")
        else:
            lines.append(f"best vs runner-up: NOT distinguishable (Welch p={w.p:.3g} >= {stats.ALPHA}):"
                         " either may be the better; more repetitions of both would tell")
    if a.best is not None and len(a.ranked) > 1:
        lines += _separation(a, setting, unit)
    if a.best is not None and a.not_run:
        lines += _unmeasured(a, space, setting, unit)
    if a.predicted is not None:
        case, value = a.predicted
        ran = next((p for p in a.ranked if p.case is case), None)
        status = f"run: {ran.mean:.4g}{unit}" if ran else "not run"
        lines.append(f"model's optimum (each axis's main effect, fitted to the cases run): "
                     f"{setting(space.setting(case), case.benchmark)}, predicted {value:.4g}{unit} "
                     f"({status})")
    elif a.best is not None and len(a.ranked) >= 3:
        lines.append("model's optimum: the best found")
    for p in a.off_grid:
        lines.append(f"ran on no setting of the grid (not counted as any case): "
                     f"{setting(p.setting, space_bench(space, p))}, "
                     f"{s.objective} {p.mean:.4g}{unit}, n={len(p.values)}; " + "; ".join(p.notes))
    if a.no_value:
        lines.append(f"cases run without a value of {s.objective}: {', '.join(a.no_value)}")
    if a.set_aside:
        shown = ", ".join(f"{cid} rep {rep}" for cid, rep, _v in a.set_aside[:6])
        lines.append(f"{s.objective}: {stats.set_aside_text([v for *_, v in a.set_aside])}, "
                     f"in no figure above: {shown}{', …' if len(a.set_aside) > 6 else ''}")
    return "\n".join(lines) + "\n"


def _separation(a: Answer, setting, unit: str) -> list[str]:
    """Which cases run cannot be told apart from the best, and why: their intervals."""
    b = stats.summarize(a.best.values)
    if b.ci is None:
        return [f"indistinguishable from the best: not known (the best has n={b.n}: no interval "
                "to separate it by)"]
    if not a.indistinguishable:
        return [f"the best is separated: no other case's 95% interval reaches its own "
                f"({b.ci[0]:.4g} to {b.ci[1]:.4g}{unit}); {len(a.ranked) - 1} other case(s) run"]

    def interval(p: Point) -> str:
        m = stats.summarize(p.values)
        if m.ci is None:
            return (f"{m.mean:.4g}{unit}, n=1: one value, taken as noisy as the best "
                    f"({m.mean - b.ci_half_width:.4g} to {m.mean + b.ci_half_width:.4g}{unit})")
        return f"95% CI {m.ci[0]:.4g} to {m.ci[1]:.4g}{unit}, n={m.n}"

    out = [f"statistically indistinguishable from the best ({len(a.indistinguishable)}: their 95% "
           f"intervals overlap the best's, {b.ci[0]:.4g} to {b.ci[1]:.4g}{unit}; more repetitions "
           "of them may tell them apart):"]
    out += [f"    {setting(p.setting, p.case.benchmark)}: {interval(p)}"
            for p in a.indistinguishable[:10]]
    if len(a.indistinguishable) > 10:
        out.append(f"    … and {len(a.indistinguishable) - 10} more")
    return out


def _unmeasured(a: Answer, space: Space, setting, unit: str) -> list[str]:
    """The cases not run that the model cannot rule out (`not_ruled_out`), or that it rules out
    every one: what the answer says of the cases it never measured."""
    from ..experiment.matrix import show_value

    b = stats.summarize(a.best.values)
    side = "lower" if a.search.maximize else "upper"
    bound = (f"the best's mean, {b.mean:.4g}{unit} (one value)" if b.ci is None else
             f"the best's 95% interval's {side} end, "
             f"{(b.ci[0] if a.search.maximize else b.ci[1]):.4g}{unit}")
    if not a.not_ruled_out:
        return [f"the {a.not_run} case(s) not run are ruled out by the model (main effects, fitted "
                f"to the cases run): their 95% prediction intervals do not reach {bound}"]
    out = [f"not measured; could be as good ({len(a.not_ruled_out)} of the {a.not_run} case(s) "
           f"not run: the model cannot rule them out, their predicted 95% interval reaches "
           f"{bound}, or it cannot predict them):"]

    def said(u: Unmeasured) -> str:
        if u.interval is None:
            return f"not run, not predicted: {u.reason(show_value)}"
        return (f"not run, predicted {u.predicted:.4g}{unit} (95% prediction interval "
                f"{u.interval[0]:.4g} to {u.interval[1]:.4g}{unit})")

    out += [f"    {setting(space.setting(u.case), u.case.benchmark)}: {said(u)}"
            for u in a.not_ruled_out[:10]]
    if len(a.not_ruled_out) > 10:
        out.append(f"    … and {len(a.not_ruled_out) - 10} more")
    return out


def space_bench(space: Space, p: Point) -> str:
    return next(c.benchmark for c in space.cases if c.case_id in p.requested)


# ------------------------------------------------------------------------ rounds via ReFrame

def search_chain(root, exp_id: str):
    """The latest search of `exp_id` (its first run and continuations), or None."""
    from ..results.record import Manifest
    from ..results.lookup import list_runs
    from ..results.store import read_manifest, results_root
    from ..results.run import Run

    for path in reversed(list_runs(results_root(root), exp_id)):
        if Manifest.from_json(read_manifest(path)).get("search_round") is not None:
            return Run.load_chain(path, root)
    return None


def run_search(root, exp, config, system, batch: int, rounds: int | None = None, new: bool = False,
               allow_changes: bool = False, reframe_args=(), dry_run: bool = False, say=print,
               log_dir: Path | None = None) -> int:
    """`iolab search`: rounds of proposed jobs, each a ReFrame run of only those jobs (a
    continuation of the search's previous round), until the budget is spent (or `rounds`).
    One line per round; with `log_dir`, ReFrame's output of each round goes to a file there,
    which the round's line names."""
    import time

    from . import campaign
    from ..experiment.matrix import expand
    from ..results.run import Run

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
        say(f"continuing the search of run {chain.run_id} ({len(chain.chain) or 1} rounds so far)")

    started, measured = time.monotonic(), 0
    limit = exp.search.budget * max(1, exp.search.repetitions)     # jobs the budget allows
    if log_dir is not None:
        log_dir.mkdir(parents=True, exist_ok=True)

    def measure(jobs, records):
        """One round: a ReFrame run of only `jobs`, continuing the search's chain."""
        nonlocal chain, measured
        last = (chain.chain[-1] if chain and chain.chain else chain)
        number = (len(chain.chain) or 1) + 1 if chain is not None else 1
        cont = campaign.Continuation(exp.id, last.run_id if last else "", chain.run_id if chain else "",
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
        chain = Run.load_chain(path, root)
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
