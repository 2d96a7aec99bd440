"""Which measured evidence moves with a metric across the cases of a study, beyond noise: the
statistics `iolab why` says its sentences from (issue 39). Measured association, never cause.

Input is per case: the metric's values per repetition, and one piece of evidence's values per
repetition (None where it was not recorded for that repetition). Three questions, in order:
1. does the metric differ between the cases at all (one-way analysis of variance over the
   repetitions)? If not, there is nothing to explain;
2. for each piece of evidence, does it rise or fall with the metric (Spearman's rank correlation
   over the repetitions, each repetition's evidence beside its own metric value), and how sure
   is that (its t approximation, n - 2 degrees of freedom)?
3. does the best case's evidence differ from the rest's (Welch's interval of the difference)?
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..distributions import f_sf, t_sf
from ..stats import CONFIDENCE, difference_ci, spearman, summarize

ALPHA = 1 - CONFIDENCE          # a p-value under this moves "beyond noise"


@dataclass(frozen=True)
class Spread:
    """One-way analysis of variance of a metric over cases: F, its degrees of freedom and p."""
    f: float
    df_between: int
    df_within: int
    p: float
    cases: int
    observations: int

    @property
    def differs(self) -> bool:
        return self.p < ALPHA


def metric_spread(groups: list[list[float]]) -> Spread | None:
    """Whether the cases' means differ beyond their repetitions' spread; None with fewer than
    two cases or no case with two repetitions (no within-case spread to set them against)."""
    groups = [[x for x in g if math.isfinite(x)] for g in groups]
    groups = [g for g in groups if g]
    k, n = len(groups), sum(len(g) for g in groups)
    if k < 2 or n - k < 1:
        return None
    try:
        grand = math.fsum(math.fsum(g) for g in groups) / n
        means = [math.fsum(g) / len(g) for g in groups]
        between = math.fsum(len(g) * (m - grand) ** 2 for g, m in zip(groups, means))
        within = math.fsum((x - m) ** 2 for g, m in zip(groups, means) for x in g)
    except OverflowError:       # values near the float's limit: no sum of squares to compare
        return None
    if not (math.isfinite(between) and math.isfinite(within)):
        return None
    if within == 0:
        # no spread inside any case: the means either are all equal or differ with certainty
        return Spread(0.0 if between == 0 else math.inf, k - 1, n - k, 1.0 if between == 0 else 0.0, k, n)
    f = (between / (k - 1)) / (within / (n - k))
    return Spread(f, k - 1, n - k, f_sf(f, k - 1, n - k), k, n)


@dataclass(frozen=True)
class Association:
    """How one piece of evidence moves with the metric over the cases."""
    rho: float | None            # Spearman's, over the paired repetitions; None: no spread
    p: float | None              # two-sided, t approximation with pairs - 2 degrees of freedom
    pairs: int                   # repetitions with both the metric and the evidence
    cases: int                   # cases with at least one such pair
    lowest: float                # the evidence's case means: lowest and highest
    highest: float
    best_minus_rest: tuple[float, float, float] | None   # difference and its interval

    @property
    def moves(self) -> bool:
        return self.rho is not None and self.p is not None and self.p < ALPHA

    @property
    def strength(self) -> float:
        return abs(self.rho) if self.rho is not None else 0.0


def rho_p(rho: float, n: int) -> float:
    """Two-sided p-value of a rank correlation over n pairs (t = rho sqrt((n-2)/(1-rho^2)))."""
    if n < 3:
        return 1.0
    if abs(rho) >= 1.0:
        return 0.0
    t = rho * math.sqrt((n - 2) / (1 - rho * rho))
    return min(1.0, 2 * t_sf(abs(t), n - 2))


def associate(metric: dict[str, list[float]], evidence: dict[str, list[float | None]],
              best: str) -> Association | None:
    """`metric` and `evidence`: case -> values per repetition, in the same repetition order;
    `best`: the case the metric ranks first. None where no case has a pair."""
    xs, ys, means = [], [], {}
    for case, values in metric.items():
        got = [(m, e) for m, e in zip(values, evidence.get(case, ()))
               if e is not None and math.isfinite(m) and math.isfinite(e)]
        if got:
            xs += [e for _m, e in got]
            ys += [m for m, _e in got]
            means[case] = math.fsum(e for _m, e in got) / len(got)
    if not means:
        return None
    rho = spearman(xs, ys)
    return Association(rho, None if rho is None else rho_p(rho, len(xs)), len(xs), len(means),
                       min(means.values()), max(means.values()),
                       _best_minus_rest(metric, evidence, best))


def _best_minus_rest(metric, evidence, best: str) -> tuple[float, float, float] | None:
    """Mean evidence of the best case minus that of the other cases' repetitions, with its
    Welch interval; None below two values on either side."""
    def values(cases):
        return [e for c in cases for m, e in zip(metric[c], evidence.get(c, ()))
                if e is not None and math.isfinite(e)]

    return difference_ci(summarize(values([best])),
                         summarize(values([c for c in metric if c != best])))
