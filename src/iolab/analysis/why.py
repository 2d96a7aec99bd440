"""Why the winner won (issue 39): for one metric of a run, which recorded evidence moved with it
across the cases beyond noise, which did not, and what was not recorded.

The order of questions is fixed, so that noise is never explained:
1. do the cases differ in the metric beyond their repetitions' spread (association.metric_spread)?
   If not, there is nothing to explain: the evidence is still listed along each varied parameter,
   since what a parameter changed (OSDs reached, write sizes) is worth knowing either way;
2. for each piece of evidence, its rank correlation with the metric over the repetitions, with
   Holm's correction over all the evidence tested (forty-odd tests at 5% would find two by chance);
3. the best case against the rest, with the interval of their difference.
Everything is measured association over these cases, never cause.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from ..experiment.matrix import show_value
from ..results import evidence as evidence_fold
from ..results.runfiles import run_name
from . import rules
from .association import ALPHA, Association, Spread, associate, metric_spread
from .compare import direction
from .report import default_metrics

NOTHING = "nothing to explain"
EXPLAINED = "explained"
CANNOT = "cannot tell"


@dataclass(frozen=True)
class Moved:
    """One piece of evidence against the metric over the cases."""
    name: str
    unit: str
    source: str
    association: Association
    p_holm: float | None                 # its p after Holm's correction over the evidence tested
    at_worst: float                      # its mean in the case the metric ranks last, and first
    at_best: float
    by_case: dict[str, float]            # case id -> mean over the case's recorded repetitions

    @property
    def moves(self) -> bool:
        return self.p_holm is not None and self.p_holm < ALPHA


@dataclass(frozen=True)
class Missing:
    """Evidence a case or more lacks, and why (as its layer says), and how to get it."""
    name: str
    source: str
    reasons: tuple[str, ...]
    cases: int
    how: str | None


@dataclass(frozen=True)
class Along:
    """One varied parameter: whether the metric moved with it, and which evidence did."""
    param: str
    values: tuple[str, ...]              # as written, in the run's case order
    spread: Spread | None                # of the metric, grouped by the parameter's value
    changed: tuple[tuple[str, str, float, float], ...]   # (name, unit, first, last value's mean)


@dataclass
class Explanation:
    experiment: str
    run_id: str
    part: str
    benchmark: str
    metric: str
    unit: str
    better: str | None
    verdict: str
    reason: str
    cases: list[str]                     # case ids, best first
    labels: dict[str, str]               # case id -> its varied parameters as written
    means: dict[str, float]
    reps: dict[str, int]
    spread: Spread | None = None
    moved: list[Moved] = field(default_factory=list)      # beyond noise, strongest first
    still: list[Moved] = field(default_factory=list)      # varied, but not with the metric
    constant: list[tuple[str, str, float]] = field(default_factory=list)  # same everywhere
    restated: list[str] = field(default_factory=list)     # the metric's own time, not evidence
    sources: set[str] = field(default_factory=set)         # with a value for some case
    rules: list = field(default_factory=list)              # rules.RuleOverCases, best first
    missing: list[Missing] = field(default_factory=list)
    along: list[Along] = field(default_factory=list)

    @property
    def best(self) -> str | None:
        return self.cases[0] if self.cases else None


def metrics_of(part) -> list[str]:
    """The metrics of a part that have a better side, in its benchmark's table order first."""
    from .. import benchmarks

    known = [m for m in default_metrics(part.benchmark) if m in part.present] \
        if part.benchmark in benchmarks.registry() else []
    rest = sorted(m for m in part.present if m not in known)
    return [m for m in known + rest if direction(m, part.units.get(m), part.benchmark)]


def explain(run, metric: str | None = None, by: str | None = None,
            parts=lambda name: True) -> list[Explanation]:
    """One explanation per part of the run that has the metric (default: each part's first
    table metric it recorded); `by` keeps one varied parameter in the 'along' list; `parts`
    chooses the parts by name."""
    out = []
    for part in run.digest.parts.values():
        if not parts(part.part):
            continue
        names = metrics_of(part)
        chosen = metric or (names[0] if names else None)
        if chosen is None or chosen not in part.present:
            continue
        try:
            out.append(_explain_part(run, part, chosen, by))
        except (OverflowError, ValueError) as exc:    # a value past the float's range
            out.append(Explanation(run.experiment_id, run_name(run.path), part.part, part.benchmark,
                                   chosen, part.units.get(chosen, ""), None, CANNOT,
                                   f"a value too large to compute with ({exc})", [], {}, {}, {}))
    return out


def _label(part, case) -> str:
    return ", ".join(f"{k}={show_value(part.benchmark, k, case.params.get(k))}"
                     for k in part.varied) or case.case_id


def _explain_part(run, part, metric: str, by: str | None) -> Explanation:
    unit = part.units.get(metric, "")
    better = direction(metric, unit, part.benchmark)
    values = {}
    reps = {}
    for cid, case in part.cases.items():
        got = list(case.values.get(metric, ()))
        if got:
            values[cid] = dict(zip(case.reps.get(metric, range(1, len(got) + 1)), got))
            reps[cid] = len(got)
    means = {c: math.fsum(v.values()) / len(v) for c, v in values.items()}
    order = sorted(means, key=lambda c: means[c], reverse=better != "lower")
    exp = Explanation(run.experiment_id, run_name(run.path), part.part, part.benchmark, metric, unit,
                      better, CANNOT, "", order, {c: _label(part, part.cases[c]) for c in order},
                      means, reps)
    if better is None:
        exp.reason = f"{metric} has no better side: give --metric with a rate or a time"
        return exp
    if len(order) < 2:
        exp.reason = f"{len(order)} case(s) with {metric}: a comparison needs two"
        return exp
    exp.spread = metric_spread([list(values[c].values()) for c in order])
    if exp.spread is None and max(reps.values()) > 1:
        exp.reason = f"{metric}'s values are too large to set against each other"
    elif exp.spread is None:
        exp.reason = "no case has two repetitions: no noise to set the differences against"
    elif not exp.spread.differs:
        exp.verdict = NOTHING
        exp.reason = (f"the cases' {metric} differs by no more than their repetitions do "
                      f"(one-way ANOVA p {p_text(exp.spread.p)})")
    else:
        exp.verdict = EXPLAINED
        exp.reason = (f"the cases' {metric} differs beyond noise (one-way ANOVA F = "
                      f"{exp.spread.f:.3g} on {exp.spread.df_between} and "
                      f"{exp.spread.df_within} df, p {p_text(exp.spread.p)})")
    exp.rules = rules.over_cases([part.cases[c] for c in order], best=order[0])
    series = _evidence(part, order)
    _sort_evidence(exp, series, values)
    exp.along = [_along(part, k, values, series, metric) for k in part.varied if by in (None, k)]
    return exp


def _evidence(part, order: list[str]) -> dict[str, dict[str, evidence_fold.Series]]:
    """name -> case id -> Series, over the cases with the metric."""
    out: dict[str, dict] = {}
    for cid in order:
        for name, s in part.cases[cid].evidence.items():
            out.setdefault(name, {})[cid] = s
    return out


def _aligned(values: dict[str, dict], by_case: dict) -> dict[str, list[float | None]]:
    """case -> the evidence per repetition, in the metric's repetition order (None: not there)."""
    out = {}
    for cid, per_rep in values.items():
        s = by_case.get(cid)
        got = dict(zip(s.reps, s.values)) if s is not None else {}
        out[cid] = [got.get(r) for r in per_rep]
    return out


def _sort_evidence(exp: Explanation, series: dict, values: dict) -> None:
    metric = {c: list(v.values()) for c, v in values.items()}
    tested = []
    for name, by_case in series.items():
        some = next(iter(by_case.values()))
        lacking = [s for s in by_case.values() if len(s.recorded()) < len(s.values) or not s.values]
        if lacking:
            reasons = tuple(dict.fromkeys(r for s in lacking for r in s.reasons()))
            exp.missing.append(Missing(name, some.source, reasons, len(lacking), how(some.source)))
        aligned = _aligned(values, by_case)
        means = {c: math.fsum(x for x in v if x is not None) / n
                 for c, v in aligned.items() if (n := sum(x is not None for x in v))}
        if means:
            exp.sources.add(some.source)
        if len(means) < 2:
            continue
        if len({x for v in aligned.values() for x in v if x is not None}) == 1:
            exp.constant.append((name, some.unit, next(iter(means.values()))))
            continue
        if restates(name, exp.metric):
            exp.restated.append(name)
            continue
        a = associate(metric, aligned, exp.best)
        if a is None:
            continue
        tested.append((name, some, a, means, _pattern(aligned)))
    holm = _holm([t[2].p for t in tested], [t[4] for t in tested])
    worst, best = exp.cases[-1], exp.cases[0]
    for (name, some, a, means, _pat), p in zip(tested, holm):
        moved = Moved(name, some.unit, some.source, a, p, means.get(worst, math.nan),
                      means.get(best, math.nan), means)
        (exp.moved if moved.moves and exp.verdict == EXPLAINED else exp.still).append(moved)
    exp.moved.sort(key=lambda m: (-m.association.strength, m.name))
    exp.still.sort(key=lambda m: m.name)


def restates(name: str, metric: str) -> bool:
    """Whether evidence moves with the metric by construction, and so explains nothing: the
    metric's own time (write_time beside write_bw: the bytes over it), the job's I/O time (the
    slowest rank's, which IOR's bandwidth is computed over), or a share of the job's time
    (metadata's share grows when the writes get faster)."""
    phase = metric.split("_", 1)[0]
    kind = _kinds().get(name)
    return kind in ("time_share", "job_time") or (kind == "time" and name == f"{phase}_time")


@functools.cache
def _kinds() -> dict[str, str]:
    return {s.name: s.kind for s in evidence_fold.specs()}


def _pattern(aligned: dict[str, list[float | None]]) -> tuple:
    """The evidence's ranks over the repetitions, up to reversal: two pieces with one pattern
    (write_ops and mean_write_size over a block-size sweep) give one test, not two."""
    xs = [x for v in aligned.values() for x in v]
    order = {x: i for i, x in enumerate(sorted({x for x in xs if x is not None}))}
    ranks = tuple(None if x is None else order[x] for x in xs)
    flipped = tuple(None if r is None else len(order) - 1 - r for r in ranks)
    return min(ranks, flipped, key=lambda t: [(-1 if r is None else r) for r in t])


def _holm(ps: list[float | None], patterns: list[tuple]) -> list[float | None]:
    """Holm's step-down adjusted p-values over the distinct tests: pieces of evidence with the
    same rank pattern are one test and share its p (None stays None, and is not counted)."""
    first: dict[tuple, int] = {}
    for i, (p, pat) in enumerate(zip(ps, patterns)):
        if p is not None:
            first.setdefault(pat, i)
    idx = sorted(first.values(), key=lambda i: ps[i])
    adjusted: dict[tuple, float] = {}
    m, running = len(idx), 0.0
    for rank, i in enumerate(idx):
        running = max(running, min(1.0, (m - rank) * ps[i]))
        adjusted[patterns[i]] = running
    return [None if p is None else adjusted[pat] for p, pat in zip(ps, patterns)]


def _along(part, key: str, values: dict, series: dict, metric: str) -> Along:
    """The metric and each piece of evidence grouped by one parameter's value."""
    groups: dict[str, list[str]] = {}
    for cid in part.cases:
        if cid in values:
            groups.setdefault(show_value(part.benchmark, key, part.cases[cid].params.get(key)),
                              []).append(cid)
    raw = {show_value(part.benchmark, key, part.cases[cs[0]].params.get(key)):
           part.cases[cs[0]].params.get(key) for cs in groups.values()}
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw.values()):
        groups = dict(sorted(groups.items(), key=lambda kv: raw[kv[0]]))
    spread = metric_spread([[x for c in cs for x in values[c].values()] for cs in groups.values()])
    changed = []
    for name, by_case in series.items():
        if restates(name, metric):
            continue
        per_value = []
        for cs in groups.values():
            got = [v for c in cs if c in by_case for _r, v in by_case[c].recorded()]
            per_value.append(got)
        if not all(per_value):
            continue
        s = metric_spread(per_value)
        if s is not None and s.differs:
            unit = next(iter(by_case.values())).unit
            changed.append((name, unit, _mean(per_value[0]), _mean(per_value[-1])))
    return Along(key, tuple(groups), spread, tuple(changed))


def as_json(e: Explanation) -> dict:
    """An explanation as plain JSON (`iolab why --json`): every figure the text says."""
    def moved(m: Moved) -> dict:
        a = m.association
        return {"name": m.name, "unit": m.unit, "source": m.source, "rho": a.rho, "p": a.p,
                "p_holm": m.p_holm, "pairs": a.pairs, "cases": a.cases, "at_worst": m.at_worst,
                "at_best": m.at_best, "best_minus_rest": a.best_minus_rest,
                "by_case": m.by_case}

    s = e.spread
    return {
        "experiment": e.experiment, "run": e.run_id, "part": e.part, "benchmark": e.benchmark,
        "metric": e.metric, "unit": e.unit, "better": e.better, "verdict": e.verdict,
        "reason": e.reason, "alpha": ALPHA,
        "cases": [{"case": c, "label": e.labels[c], "mean": e.means[c], "n": e.reps[c]}
                  for c in e.cases],
        "spread": None if s is None else {"f": s.f, "df_between": s.df_between,
                                          "df_within": s.df_within, "p": s.p},
        "moved": [moved(m) for m in e.moved], "did_not_move": [moved(m) for m in e.still],
        "constant": [{"name": n, "unit": u, "value": v} for n, u, v in e.constant],
        "restates_metric": e.restated,
        "not_recorded": [{"name": m.name, "source": m.source, "reasons": list(m.reasons),
                          "cases": m.cases, "how": m.how} for m in e.missing],
        "rules": [_rule_json(r) for r in e.rules],
        "along": [{"param": a.param, "values": list(a.values),
                   "metric_p": None if a.spread is None else a.spread.p,
                   "changed": [{"name": n, "unit": u, "first": f, "last": la}
                               for n, u, f, la in a.changed]} for a in e.along],
    }


def _rule_json(r) -> dict:
    sep = r.separation
    return {"rule": r.rule.name, "title": r.rule.title, "source": r.rule.source,
            "cases": {c: {"state": check.state, "text": check.text} for c, check in r.checks.items()},
            "separates": None if sep is None else sep.separates,
            "separation": None if sep is None else sep.text,
            "direction": None if sep is None else sep.direction}


def _mean(xs) -> float:
    return math.fsum(xs) / len(xs)


def p_text(p: float) -> str:
    """'< 0.001' or '= 0.042': a p-value as the sentences say it."""
    return "< 0.001" if p < 0.001 else f"= {p:.3f}"


def how(source: str) -> str | None:
    """How to get a source's evidence recorded, as its layer says."""
    from ..layers import registry

    return registry.evidence_hint(source)
