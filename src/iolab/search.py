"""Budgeted adaptive search over an experiment's grid (`search:` in the YAML).

The matrix defines the space: `matrix.expand` gives the grid, and every case is one point of it,
named by its case id. A strategy reads the records so far and proposes the next jobs
((part, case_id, repetition), as `iolab resume` runs them) until the budget is spent:

- `random`: the grid in an order drawn from the seed;
- `bayes`: `initial` cases in that random order, then Optuna's TPE sampler (multivariate) over
  the axes (numbers as ordered integer indexes, anything else categorical) proposes the next;
- `halving`: successive halving over repetitions: many cases with one repetition, the better
  half gets twice as many, and so on up to `repetitions`.

The same seed and records give the same proposals: nothing else is random, and the Optuna study
is rebuilt from the records each time (so a search resumes from its records alone).

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

from .errors import IolabError
from .load import Search
from .matrix import Case
from .record import Record

NOT_APPLIED = "not applied"
PART = "part"           # the pseudo-axis of an experiment with several parts


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
    striping = record.observed.striping_not_applied()
    for k in axes:
        asked = record.part if k == PART else record.params.get(k)
        value = asked
        if k.startswith("lustre.") and striping and asked is not None:
            value = NOT_APPLIED
            notes.append(f"{k}={asked}: {striping}")
        elif k.startswith("mpiio.") and asked is not None:
            got = record.observed.effective(k)
            if got is not None and got != asked:
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

    def best(self, maximize: bool) -> Point | None:
        found = [p for p in self.points if p.case is not None and p.values]
        if not found:
            return None
        return (max if maximize else min)(found, key=lambda p: (p.mean, len(p.values)))

    @property
    def jobs(self) -> int:
        return sum(len(r) for r in self.spent.values())


def observe(space: Space, records: list[Record], objective: str) -> State:
    ids = {c.case_id: c for c in space.cases}
    points: dict[tuple, Point] = {}
    spent: dict[str, set] = {}
    by_request: dict[str, list[float]] = {}
    for r in records:
        if r.case_id not in ids:
            continue        # not a case of this grid (another experiment version): not counted
        spent.setdefault(r.case_id, set()).add(r.repetition)
        value = r.value(objective) if r.ok else None
        if value is None or not math.isfinite(value):
            continue
        setting, notes = effective_setting(r, space.axes)
        key = tuple(repr(setting[k]) for k in space.axes)
        p = points.get(key)
        if p is None:
            p = points[key] = Point(setting, space.case_for(setting))
        p.values.append(float(value))
        if r.case_id not in p.requested:
            p.requested.append(r.case_id)
        p.notes += [n for n in notes if n not in p.notes]
        by_request.setdefault(r.case_id, []).append(float(value))
    return State(list(points.values()), spent, by_request)


# -------------------------------------------------------------------------------- proposals

def _optuna():
    """Optuna (the `search` extra), or an error that says how to install it."""
    try:
        import optuna
    except ImportError:
        raise IolabError("strategy bayes needs Optuna, which is not installed",
                         hint="pip install 'iolab[search]' (or choose strategy random or halving)") from None
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
          on_round=None) -> list[Record]:
    """Rounds until the budget is spent: propose, then `measure(jobs)` -> the jobs' records.
    Starts from `records` (a search resumes from what it has); returns every record."""
    records = list(records)
    while True:
        jobs = propose(search, space, records, batch)
        if not jobs:
            return records
        got = list(measure(jobs))
        if not got:
            raise IolabError(f"the search's round of {len(jobs)} jobs gave no records: stopped")
        records += got
        if on_round:
            on_round(jobs, records)


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
