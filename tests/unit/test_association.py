"""The statistics `iolab why` speaks from (analysis/association.py), against scipy's."""

from __future__ import annotations

import math
import random

import pytest

from iolab.analysis import association as assoc

scipy_stats = pytest.importorskip("scipy.stats")


def _groups(seed: int, means, reps: int, sd: float):
    rng = random.Random(seed)
    return [[rng.gauss(m, sd) for _ in range(reps)] for m in means]


@pytest.mark.parametrize("seed", range(5))
def test_the_metric_s_spread_is_scipy_s_one_way_anova(seed):
    groups = _groups(seed, [100, 104, 110], 3 + seed, 3.0)
    mine = assoc.metric_spread(groups)
    theirs = scipy_stats.f_oneway(*groups)
    assert mine.f == pytest.approx(theirs.statistic, rel=1e-9)
    assert mine.p == pytest.approx(theirs.pvalue, rel=1e-6, abs=1e-12)
    assert (mine.df_between, mine.df_within) == (2, 3 * (3 + seed) - 3)


def test_cases_that_differ_only_by_noise_do_not_differ_and_real_steps_do():
    same = _groups(1, [100, 100, 100, 100], 5, 4.0)
    assert not assoc.metric_spread(same).differs
    steps = _groups(1, [100, 150, 200, 250], 5, 4.0)
    assert assoc.metric_spread(steps).differs


def test_the_spread_needs_two_cases_and_a_repetition_to_set_them_against():
    assert assoc.metric_spread([[1.0, 2.0]]) is None
    assert assoc.metric_spread([[1.0], [2.0]]) is None
    exact = assoc.metric_spread([[1.0, 1.0], [2.0, 2.0]])
    assert exact.differs and exact.p == 0.0
    assert not assoc.metric_spread([[1.0, 1.0], [1.0, 1.0]]).differs


@pytest.mark.parametrize("seed", range(4))
def test_rho_and_its_p_value_are_scipy_s(seed):
    rng = random.Random(seed)
    x = [rng.random() for _ in range(12)]
    y = [a + rng.gauss(0, 0.3) for a in x]
    from iolab.stats import spearman

    rho = spearman(x, y)
    theirs = scipy_stats.spearmanr(x, y)
    assert rho == pytest.approx(theirs.statistic, rel=1e-12)
    assert assoc.rho_p(rho, len(x)) == pytest.approx(theirs.pvalue, rel=1e-6)


def test_evidence_that_rises_with_the_metric_moves_and_noise_does_not():
    """Three stripe counts, 3 repetitions: the OSDs reached follow the bandwidth; a counter that
    is noise does not. Repetitions are paired by their index."""
    bw = {"c1": [100.0, 104.0, 98.0], "c2": [190.0, 185.0, 200.0], "c4": [350.0, 340.0, 362.0]}
    osds = {"c1": [1.0, 1.0, 1.0], "c2": [2.0, 2.0, 2.0], "c4": [4.0, 4.0, 4.0]}
    rng = random.Random(7)
    noise = {c: [rng.random() for _ in range(3)] for c in bw}
    moved = assoc.associate(bw, osds, best="c4")
    assert moved.moves and moved.rho == pytest.approx(scipy_stats.spearmanr(
        [1, 1, 1, 2, 2, 2, 4, 4, 4], [100, 104, 98, 190, 185, 200, 350, 340, 362]).statistic)
    assert (moved.pairs, moved.cases, moved.lowest, moved.highest) == (9, 3, 1.0, 4.0)
    diff, low, high = moved.best_minus_rest
    assert diff == pytest.approx(4 - 1.5) and low < diff < high
    still = assoc.associate(bw, noise, best="c4")
    assert not still.moves and still.strength < moved.strength


def test_evidence_not_recorded_is_left_out_never_read_as_zero():
    bw = {"a": [1.0, 2.0], "b": [3.0, 4.0], "c": [5.0, 6.0]}
    part = assoc.associate(bw, {"a": [None, None], "b": [10.0, 11.0], "c": [20.0, 21.0]}, best="c")
    assert (part.pairs, part.cases, part.lowest) == (4, 2, 10.5)
    assert assoc.associate(bw, {"a": [None, None]}, best="c") is None


def test_best_minus_rest_is_welch_s_interval():
    rng = random.Random(3)
    metric = {c: [rng.random() for _ in range(4)] for c in "abc"}
    ev = {c: [rng.gauss(i, 1) for _ in range(4)] for i, c in enumerate("abc")}
    diff, low, high = assoc.associate(metric, ev, best="c").best_minus_rest
    best, rest = ev["c"], ev["a"] + ev["b"]
    theirs = scipy_stats.ttest_ind(best, rest, equal_var=False).confidence_interval(0.95)
    assert diff == pytest.approx(sum(best) / 4 - sum(rest) / 8)
    assert (low, high) == pytest.approx((theirs.low, theirs.high), rel=1e-6)
    assert math.isclose(diff, (low + high) / 2)
