"""Statistics per table cell and between two cells, against hand-computed values and scipy."""

from __future__ import annotations

import math
import statistics

import pytest
from scipy import stats as sp

from iolab import stats


def test_t_quantiles_match_printed_tables():
    # Two-sided 95%: the values in every t table
    assert stats.t_quantile(1) == pytest.approx(12.706, abs=1e-3)
    assert stats.t_quantile(2) == pytest.approx(4.303, abs=1e-3)
    assert stats.t_quantile(4) == pytest.approx(2.776, abs=1e-3)
    assert stats.t_quantile(30) == pytest.approx(2.042, abs=1e-3)


# degrees of freedom as they occur (n - 1, Welch's fractional df) and far beyond
_DFS = [0.3, 0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 7, 9, 9.99, 10, 10.01, 19, 29, 30.7, 50, 99, 100,
        333.3, 1000, 1e4, 1e5]


def test_t_quantile_agrees_with_scipy():
    special = pytest.importorskip("scipy.special")
    for df in _DFS:
        for confidence in (0.5, 0.8, 0.9, 0.95, 0.99, 0.999):
            want = float(special.stdtrit(df, 1 - (1 - confidence) / 2))
            assert stats.t_quantile(df, confidence) == pytest.approx(want, rel=1e-12), (df, confidence)


def test_t_tail_agrees_with_scipy():
    special = pytest.importorskip("scipy.special")
    for df in _DFS:
        for t in (0.0, 1e-3, 0.1, 0.5, 1, 1.96, 2, 3, 5, 10, 30, 100, 1e3):
            want = float(special.stdtr(df, -t))
            assert stats.t_sf(t, df) == pytest.approx(want, rel=1e-11, abs=1e-300), (df, t)
            assert stats.t_sf(-t, df) == pytest.approx(1 - want, rel=1e-12), (df, t)


def test_t_tail_on_each_side_of_the_series_bounds():
    # the tail takes the power series where it is short (from either side of the beta
    # function) and the continued fraction elsewhere: a dense grid over Welch's degrees of
    # freedom and the t of a p-value near alpha or a 95% quantile crosses every switch
    special = pytest.importorskip("scipy.special")
    for i in range(45):
        df = 1.2 * 1.23 ** i                    # 1.2 .. about 11,000
        for j in range(30):
            t = 0.05 * 1.18 ** j                # 0.05 .. about 6
            want = float(special.stdtr(df, -t))
            assert stats.t_sf(t, df) == pytest.approx(want, rel=1e-12), (df, t)
            assert stats.t_sf(-t, df) == pytest.approx(1 - want, rel=1e-12), (df, t)


def test_t_tail_by_hand():
    # df = 1 is Cauchy: P(T > 1) = 1/4; df = 2: P(T > t) = (1 - t / sqrt(2 + t^2)) / 2
    assert stats.t_sf(1.0, 1) == pytest.approx(0.25, rel=1e-14)
    assert stats.t_sf(3.0, 2) == pytest.approx((1 - 3 / math.sqrt(11)) / 2, rel=1e-13)
    assert stats.t_sf(math.inf, 5) == 0.0 and stats.t_sf(-math.inf, 5) == 1.0


def test_no_scipy_import_for_statistics():
    import subprocess
    import sys

    code = ("import sys; from iolab import stats; s = stats.summarize([1, 2, 4]); "
            "stats.welch(s, stats.summarize([2, 3, 9])); stats.spearman([1, 2, 3], [3, 1, 2]); "
            "print('scipy' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_summary_three_values_by_hand():
    s = stats.summarize([10, 12, 14])
    # mean = 36 / 3 = 12; deviations -2, 0, 2; s^2 = (4 + 0 + 4) / (3 - 1) = 4, s = 2
    assert (s.n, s.mean, s.median, s.min, s.max) == (3, 12, 12, 10, 14)
    assert s.stddev == pytest.approx(2.0)
    # CV = 2 / 12 = 0.1667 > 0.10: noisy
    assert s.cv == pytest.approx(1 / 6)
    assert s.noisy
    # half-width = t(0.975, 2) * s / sqrt(3) = 4.302653 * 2 / 1.732051 = 4.968275
    assert s.ci_half_width == pytest.approx(4.968275, rel=1e-6)
    assert s.ci == pytest.approx((12 - 4.968275, 12 + 4.968275), rel=1e-6)
    assert s.rel_half_width == pytest.approx(4.968275 / 12, rel=1e-6)
    assert s.outliers == ()


def test_summary_five_values_quiet():
    s = stats.summarize([100, 101, 99, 100, 100])
    # mean 100; s^2 = (0 + 1 + 1 + 0 + 0) / 4 = 0.5, s = 0.707107; CV = 0.00707 (not noisy)
    assert s.stddev == pytest.approx(math.sqrt(0.5))
    assert s.cv == pytest.approx(0.00707107, rel=1e-5)
    assert not s.noisy
    # half-width = 2.776445 * 0.707107 / sqrt(5) = 0.877984
    assert s.ci_half_width == pytest.approx(0.877984, rel=1e-5)


def test_noisy_threshold_is_strictly_above_ten_percent():
    # [90, 110]: mean 100, s = sqrt(200) = 14.14: noisy. [95, 105]: s = 7.07, CV 7.1%: quiet.
    assert stats.summarize([90, 110]).noisy
    assert not stats.summarize([95, 105]).noisy
    assert stats.NOISY_CV == 0.10


def test_one_value_has_no_interval():
    s = stats.summarize([1382.13])
    assert s.n == 1 and s.mean == 1382.13 and s.n_too_small
    assert s.stddev is None and s.cv is None and s.ci_half_width is None and s.ci is None
    assert not s.noisy and s.outliers == ()


def test_no_values():
    s = stats.summarize([])
    assert s.n == 0 and s.mean is None and s.ci is None


def test_modified_z_outlier_by_hand():
    values = [10, 11, 12, 13, 50]
    # median 12; |x - 12| = 2, 1, 0, 1, 38 -> sorted 0, 1, 1, 2, 38 -> MAD = 1
    # z(50) = 0.6745 * 38 / 1 = 25.631; z(10) = 0.6745 * -2 = -1.349
    z = stats.modified_z_scores(values)
    assert z[4] == pytest.approx(25.631)
    assert z[0] == pytest.approx(-1.349)
    (o,) = stats.summarize(values).outliers
    assert (o.index, o.value) == (4, 50)
    # flagged, not dropped: the mean still includes 50 -> 96 / 5 = 19.2
    assert stats.summarize(values).mean == pytest.approx(19.2)


def test_outlier_threshold_is_3_5():
    # median 12, MAD 1: z = 0.6745 * d; d = 5.19 -> 3.5006 (outlier), d = 5.18 -> 3.4939 (not)
    assert [o.value for o in stats.outliers([10, 11, 12, 13, 17.19])] == [17.19]
    assert stats.outliers([10, 11, 12, 13, 17.18]) == ()


def test_modified_z_falls_back_to_mean_absolute_deviation():
    # [5, 5, 5, 5, 9]: median 5, deviations 0, 0, 0, 0, 4 -> MAD = 0;
    # MeanAD = 4 / 5 = 0.8; z(9) = 4 / (1.253314 * 0.8) = 3.98942 > 3.5
    z = stats.modified_z_scores([5, 5, 5, 5, 9])
    assert z[4] == pytest.approx(3.98942, rel=1e-5)
    assert [o.value for o in stats.outliers([5, 5, 5, 5, 9])] == [9]
    # [5, 5, 5, 9]: MeanAD = 4 / 4 = 1, z = 4 / 1.253314 = 3.19154: not an outlier
    assert stats.modified_z_scores([5, 5, 5, 9])[3] == pytest.approx(3.19154, rel=1e-5)
    assert stats.outliers([5, 5, 5, 9]) == ()


def test_no_outliers_below_three_values_or_without_spread():
    assert stats.modified_z_scores([1, 1000]) is None
    assert stats.modified_z_scores([3, 3, 3]) is None
    assert stats.summarize([3, 3, 3]).cv == 0


def test_welch_by_hand_and_against_scipy():
    a, b = stats.summarize([10, 12, 14]), stats.summarize([20, 22, 24, 26])
    w = stats.welch(a, b)
    # v_A = s_A^2 / n_A = 4 / 3; s_B^2 = (9 + 1 + 1 + 9) / 3 = 20 / 3, v_B = (20 / 3) / 4 = 5 / 3
    # t = (23 - 12) / sqrt(4/3 + 5/3) = 11 / sqrt(3) = 6.350853
    assert w.t == pytest.approx(6.350853, rel=1e-6)
    # df = (v_A + v_B)^2 / (v_A^2 / 2 + v_B^2 / 3) = 9 / (0.888889 + 0.925926) = 4.959184
    assert w.df == pytest.approx(4.959184, rel=1e-6)
    ref = sp.ttest_ind([20, 22, 24, 26], [10, 12, 14], equal_var=False)
    assert w.t == pytest.approx(ref.statistic) and w.p == pytest.approx(ref.pvalue)
    assert w.p == pytest.approx(0.0014733, rel=1e-4)


@pytest.mark.parametrize("xa, xb", [
    ([1404.0598, 1434.52, 1382.13], [1567.5033, 1577.048, 1577.5]),
    ([1.0, 2.0, 3.0, 4.0], [2.5, 2.6, 2.4]),
    ([5.0, 5.5], [5.2, 5.3, 9.0, 5.1, 5.0]),
])
def test_welch_matches_scipy(xa, xb):
    w = stats.welch(stats.summarize(xa), stats.summarize(xb))
    ref = sp.ttest_ind(xb, xa, equal_var=False)
    assert w.t == pytest.approx(ref.statistic)
    assert w.p == pytest.approx(ref.pvalue)


def test_welch_needs_two_values_per_side():
    assert stats.welch(stats.summarize([1.0]), stats.summarize([2.0, 3.0])) is None


def test_welch_without_spread_is_degenerate():
    w = stats.welch(stats.summarize([2, 2]), stats.summarize([3, 3]))
    assert w.degenerate and w.p == 0.0
    assert stats.welch(stats.summarize([2, 2]), stats.summarize([2, 2])).p == 1.0


def test_ratio_ci_delta_method_by_hand():
    a, b = stats.summarize([10, 12, 14]), stats.summarize([20, 22, 24, 26])
    # R = 23 / 12 = 1.916667
    # w_A = s_A^2 / (n_A mA^2) = 4 / (3 * 144) = 0.00925926; w_B = (20/3) / (4 * 529) = 0.00315060
    # se = sqrt(0.01240986) = 0.1113995
    # df = 0.01240986^2 / (0.00925926^2 / 2 + 0.00315060^2 / 3) = 3.335187; t(0.975, 3.335) = 3.008941
    # CI = 1.916667 * exp(-/+ 3.008941 * 0.1113995) = 1.370798 .. 2.679907
    lo, hi = stats.ratio_ci(a, b)
    assert lo == pytest.approx(1.370798, rel=1e-5)
    assert hi == pytest.approx(2.679907, rel=1e-5)
    assert lo * hi == pytest.approx((23 / 12) ** 2)  # symmetric on a log scale


def test_ratio_ci_needs_two_values_and_positive_means():
    assert stats.ratio_ci(stats.summarize([1.0]), stats.summarize([2.0, 3.0])) is None
    assert stats.ratio_ci(stats.summarize([0.0, 0.0]), stats.summarize([2.0, 3.0])) is None
    assert stats.ratio_ci(stats.summarize([2, 2]), stats.summarize([4, 4])) == (2.0, 2.0)


def test_reps_needed_by_hand():
    # [90, 100, 110]: mean 100, s = 10, CV = 0.1. Target 5%:
    # n = 17: t(16) * 0.1 / sqrt(17) = 2.119905 * 0.1 / 4.123106 = 0.051415 > 0.05
    # n = 18: t(17) * 0.1 / sqrt(18) = 2.109816 * 0.1 / 4.242641 = 0.049729 <= 0.05
    assert stats.reps_needed([90, 100, 110], 0.05) == 18
    # a looser target needs fewer: 10% -> n = 7: 2.446912 * 0.1 / 2.645751 = 0.092485
    #                                     n = 6: 2.570582 * 0.1 / 2.449490 = 0.104943
    assert stats.reps_needed([90, 100, 110], 0.10) == 7
    assert stats.reps_needed([5.0, 5.0, 5.0], 0.05) == 2
    assert stats.reps_needed([5.0], 0.05) is None
    with pytest.raises(ValueError):
        stats.reps_needed([1, 2], 0)


def test_spearman():
    assert stats.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert stats.spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)
    # ranks x: 1 2 3 4, y: 1 3 2 4 -> d^2 = 0 + 1 + 1 + 0 = 2; rho = 1 - 6 * 2 / (4 * 15) = 0.8
    assert stats.spearman([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(0.8)
    assert stats.spearman([1, 2], [1, 2]) is None
    assert stats.spearman([1, 2, 3], [5, 5, 5]) is None


def test_spearman_with_ties_agrees_with_scipy():
    x = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3]
    y = [2, 7, 1, 8, 2, 8, 1, 8, 2, 8]
    assert stats.spearman(x, y) == pytest.approx(sp.spearmanr(x, y).statistic, rel=1e-12)


def test_a_packed_summary_unpacks_to_the_same_summary():
    import random

    rng = random.Random(7)
    cases = [[], [3.5], [2.0, 2.0], [1.0, 2.0, 4.0], [5.0] * 6 + [50.0], [0.0, 0.0, 1e-300]]
    cases += [[rng.choice([rng.gauss(100, 5), 7.0, math.nan if i == 3 else 1.0])
               for _ in range(rng.randint(1, 12))] for i in range(300)]
    for values in cases:
        s = stats.summarize(values)
        back = stats.unpack(values, stats.pack(s))
        assert repr(back) == repr(s)          # repr: NaN == NaN, None stays None


# Finite floats at their edges (and past them): no statistic may raise, and none may show a
# value it was not given or that is not a float.
_EDGES = [0.0, -0.0, 5e-324, -5e-324, 2.2e-308, 1e-200, 1.0, 125.0, 1e100, 1e150, -1e150,
          1.0000001e150, 1e200, -1e200, 1e300, 1e308, -1e308, 1.7976931348623157e308,
          -1.7976931348623157e308]


def _draws(seed: int, count: int):
    import random

    rng = random.Random(seed)
    for _ in range(count):
        n = rng.randint(0, 7)
        yield [rng.choice(_EDGES) * rng.choice((1, 1, 0.5, 3)) if rng.random() < 0.6
               else rng.uniform(-1e3, 1e3) for _ in range(n)]


def test_no_statistic_raises_for_any_finite_input():
    pairs = list(_draws(0, 1500))
    for a_values, b_values in zip(pairs, pairs[1:]):
        a, b = stats.summarize(a_values), stats.summarize(b_values)
        for s, values in ((a, a_values), (b, b_values)):
            assert s.n + len(s.set_aside) == len(values)
            assert all(abs(x) <= stats.LIMIT for x in s.values)
            assert all(abs(x) > stats.LIMIT for x in s.set_aside)
            for figure in (s.mean, s.median, s.min, s.max, s.stddev, s.cv, s.ci_half_width):
                assert figure is None or math.isfinite(figure), (values, s)
            assert stats.unpack(values, stats.pack(s)) == s
            stats.reps_needed(values, 0.05)
            stats.outliers(values)
        w = stats.welch(a, b)
        assert w is None or (0 <= w.p <= 1 and not math.isnan(w.df)), (a_values, b_values, w)
        ci = stats.ratio_ci(a, b)
        assert ci is None or all(math.isfinite(x) and x > 0 for x in ci), (a_values, b_values, ci)


def test_a_huge_value_is_set_aside_and_the_rest_summarized():
    s = stats.summarize([125.0, 1e308, 130.0, math.inf, math.nan])
    assert s.values == (125.0, 130.0) and s.n == 2 and s.mean == 127.5
    assert s.set_aside[:2] == (1e308, math.inf) and math.isnan(s.set_aside[2])
    assert stats.set_aside_text(s.set_aside) == \
        "3 values set aside (1e+308, inf, nan: not finite or above 1e+150)"
    assert stats.set_aside_text((1e308,)) == "1 value set aside (1e+308: above 1e+150)"
    # at the limit itself the figures are still floats: kept
    edge = stats.summarize([1e150, -1e150, 1e150])
    assert edge.n == 3 and not edge.set_aside and math.isfinite(edge.ci_half_width)
    assert stats.welch(edge, stats.summarize([1e150, 1e-300])).p <= 1


def test_split_sets_aside_exactly_what_is_not_usable():
    """split's fast check (a finite sum, then the extremes) agrees with the value-by-value rule
    on every mix of finite, huge, infinite and nan values, including sums that overflow."""
    import random

    pick = random.Random(7)
    pool = [1.0, -3.5, 0.0, 1e150, -1e150, 1.5e150, 1e308, -1e308, math.nan, math.inf, -math.inf]
    for _ in range(3000):
        values = [pick.choice(pool) for _ in range(pick.randint(0, 7))]
        want = (tuple(x for x in values if stats.usable(x)), tuple(x for x in values if not stats.usable(x)))
        assert repr(stats.split(values)) == repr(want), values


def _grid_values():
    """(grid, case id, metric) -> the values of the six measured grids (3 repetitions each)."""
    import gzip
    import json
    from pathlib import Path

    out = {}
    for grid in sorted((Path(__file__).parents[1] / "data" / "grids").iterdir()):
        if not grid.is_dir():
            continue
        plain = grid / "records.jsonl"
        text = plain.read_text() if plain.exists() else gzip.open(grid / "records.jsonl.gz", "rt").read()
        for line in text.splitlines():
            r = json.loads(line)
            if r["status"] == "ok":
                for m in r["metrics"]:
                    out.setdefault((grid.name, r["case_id"], m["name"]), []).append(m["value"])
    return out


def test_three_real_repetitions_flag_no_outlier():
    """Real runs of 3 repetitions: the modified z-score flagged their noise (a value 13% below
    two that agree has z = -30: MAD of 3 values is the smaller distance from the median), so
    nothing is flagged below OUTLIER_MIN_N = 5 values, as the table's footnote says; the
    score itself is still defined from 3."""
    from iolab.analysis.report import LEGEND

    found = _grid_values()
    assert len({k[0] for k in found}) == 6 and {len(v) for v in found.values()} == {3}
    # the noise that was flagged: values all within 20% of their median
    close = {k: v for k, v in found.items()
             if (med := statistics.median(v)) > 0 and all(abs(x - med) <= 0.2 * med for x in v)}
    assert len(close) > 1000
    assert not [k for k, v in close.items() if stats.summarize(v).outliers or stats.outliers(v)]
    assert not [k for k, v in found.items() if stats.summarize(v).outliers]
    assert stats.OUTLIER_MIN_N == 5
    assert "flagged from 5 repetitions on (fewer are never flagged)" in LEGEND
    # small-io-local, one case's write_bw: 13% below two that agree within 0.3%
    real = [782.5559, 902.5103, 899.8721]
    assert stats.modified_z_scores(real)[0] == pytest.approx(-29.99, abs=0.01)
    assert stats.outliers(real) == () and stats.outliers([100, 98, 84, 99]) == ()
    # five values: the rule applies
    assert [o.value for o in stats.outliers([100.0, 98.0, 99.0, 101.0, 84.0])] == [84.0]
