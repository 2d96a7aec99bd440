"""Statistics over repetitions: one summary per table cell, Welch's test and ratio intervals.

The rules, stated once (docs/analysis.md, "Statistics", repeats them):

- Confidence interval of a mean: mean ± t(0.975, n-1) * s / sqrt(n), Student's t with the sample
  standard deviation s (n-1 in the denominator). Below n = 2 there is none ("n too small").
- Coefficient of variation: s / |mean|. A cell whose CV is above NOISY_CV (10%) is "noisy".
- Outliers: the modified z-score of Iglewicz and Hoaglin (1993),
  M_i = 0.6745 * (x_i - median) / MAD, with MAD the median of |x_i - median|; |M_i| > 3.5 flags
  x_i. When MAD is 0 (more than half the values equal), the mean absolute deviation from the
  median stands in: M_i = (x_i - median) / (1.253314 * MeanAD). The score is defined from
  n = 3, but flags only from n = OUTLIER_MIN_N (5): with 3 values MAD is the smaller of two
  distances from the median, so the other is flagged whenever it is 5.2 times as far (a value
  16% below two that agree within 2% has z = -4.0), and with 4 it is as fragile: on the six
  measured grids (3 repetitions each) it flagged hundreds of values within 20% of their median.
  Outliers are flagged, never dropped: the mean and the interval include them.
- Two means: Welch's t-test (unequal variances, Welch-Satterthwaite degrees of freedom), two-sided,
  alpha = 0.05; below n = 2 on either side there is no test ("n too small").
- Ratio B/A of two means: delta method on log(B/A): se = sqrt(s_B^2/(n_B mB^2) + s_A^2/(n_A mA^2)),
  interval (B/A) * exp(± t(0.975, df) * se) with Welch-Satterthwaite df over the two terms. It
  stays positive and is symmetric on a log scale, as ratios should be.
- Repetitions for a target relative half-width h: the smallest n >= 2 with
  t(0.975, n-1) * CV / sqrt(n) <= h, CV taken from earlier runs.
- Drift over time (analysis/drift.py): the slope of log(value) on time within cells (each
  cell's own mean taken out, a fixed-effects regression), with a 95% interval from Student's t
  on N - cells - 1 degrees of freedom; the run drifts when the interval excludes 0.
- Blocks over time (analysis/drift.py): log(value) in a two-way additive model, cell + block
  (block k: each cell's k-th value in time), fitted by least squares (backfitting, exact for
  unbalanced cells too); the block effect's F = ((RSS_cell - RSS_cell+block) / (B - 1)) /
  (RSS_cell+block / (N - C - B + 1)), its p from Snedecor's F; the run drifts when p < 0.05.
- A drift reference's series (analysis/drift.py): the slope of log(value) on time (Student's t
  on n - 2 degrees of freedom), and its largest departure from its median, D = max |y_i -
  median(y)| / median |y_i+1 - y_i| (the noise from successive differences, which a step or a
  slow period changes in one or two places only). D does not change with the series' level or
  scale, so under no drift (independent normal values) its distribution depends on n alone: p
  is the share of DEPARTURE_SIMULATIONS such series, drawn from a fixed seed, with a D as large.
- A value that is not finite or whose magnitude is above LIMIT (1e150) is set aside: kept in
  Summary.set_aside, out of every figure, and named by the tables' notes. Below LIMIT every
  square and sum these rules take is a finite float, so no statistic raises for any input.
"""

from __future__ import annotations

import bisect
import functools
import math
import random
import statistics
import struct
from array import array
from statistics import NormalDist
from dataclasses import dataclass, field

from .distributions import CONFIDENCE, f_sf, t_quantile, t_sf

NOISY_CV = 0.10            # a cell with CV above this is marked noisy
OUTLIER_Z = 3.5            # |modified z-score| above this is an outlier
OUTLIER_MIN_N = 5          # fewer values are never flagged: their MAD is too fragile (above)
Z_MIN_N = 3                # the modified z-score needs a median and a spread about it
ALPHA = 0.05               # significance level of Welch's test (two-sided)
_MAD_K = 0.6745            # Phi^-1(0.75): makes MAD comparable to a standard deviation
_MEANAD_K = 1.253314       # sqrt(pi/2): the same for the mean absolute deviation
MAX_SUGGESTED_REPS = 10000
LIMIT = 1e150              # |value| above this is set aside: its square must stay a float


def stdev(xs: tuple[float, ...], mean: float) -> float:
    """Sample standard deviation in floats (math.fsum), n >= 2."""
    try:
        return math.sqrt(math.fsum([(x - mean) ** 2 for x in xs]) / (len(xs) - 1))
    except OverflowError:       # tens of millions of values near LIMIT: scaled, the same figure
        big = max(abs(x - mean) for x in xs)
        return big * math.sqrt(math.fsum([((x - mean) / big) ** 2 for x in xs]) / (len(xs) - 1))


def usable(x: float) -> bool:
    """A value the statistics take: finite, magnitude at most LIMIT."""
    return -LIMIT <= x <= LIMIT         # false for nan too


def split(values) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """The values as floats: those the statistics take, and those set aside (see LIMIT)."""
    # an array of doubles (a digest's) holds floats already
    xs = tuple(values) if type(values) is array and values.typecode == "d" else tuple(map(float, values))
    # in C: a sum that is finite rules out nan and inf, then the extremes bound the rest
    if not xs or (math.isfinite(sum(xs)) and -LIMIT <= min(xs) and max(xs) <= LIMIT):
        return xs, ()
    return tuple(x for x in xs if usable(x)), tuple(x for x in xs if not usable(x))


def set_aside_text(values) -> str:
    """What a note says of values set aside, e.g. '1 value set aside (1e+308: above 1e+150)'."""
    shown = ", ".join(f"{x:g}" for x in values[:3]) + (", …" if len(values) > 3 else "")
    why = "not finite" if not any(math.isfinite(x) for x in values) else (
        f"above {LIMIT:g}" if all(math.isfinite(x) for x in values) else f"not finite or above {LIMIT:g}")
    return f"{len(values)} value{'s' * (len(values) > 1)} set aside ({shown}: {why})"


@dataclass(frozen=True)
class Outlier:
    index: int          # position in the values
    value: float
    modified_z: float


@dataclass(frozen=True)
class Summary:
    values: tuple[float, ...]
    n: int
    mean: float | None
    median: float | None
    min: float | None
    max: float | None
    stddev: float | None           # sample standard deviation; None below n = 2
    cv: float | None               # stddev / |mean|; None below n = 2 or for a zero mean
    ci_half_width: float | None    # None below n = 2
    outliers: tuple[Outlier, ...] = field(default=())
    set_aside: tuple[float, ...] = field(default=())    # not in values: not finite, or above LIMIT

    @property
    def ci(self) -> tuple[float, float] | None:
        if self.ci_half_width is None or self.mean is None:
            return None
        return (self.mean - self.ci_half_width, self.mean + self.ci_half_width)

    @property
    def rel_half_width(self) -> float | None:
        if self.ci_half_width is None or not self.mean:
            return None
        return self.ci_half_width / abs(self.mean)

    @property
    def noisy(self) -> bool:
        return self.cv is not None and self.cv > NOISY_CV

    @property
    def n_too_small(self) -> bool:
        return self.n < 2


def _median(ordered: list[float]) -> float:
    """statistics.median of values already sorted (the same arithmetic)."""
    n = len(ordered)
    if n % 2:
        return ordered[n // 2]
    return (ordered[n // 2 - 1] + ordered[n // 2]) / 2


def _z_scores(xs, med: float) -> list[float] | None:
    deviations = [abs(x - med) for x in xs]
    mad = _median(sorted(deviations))
    if mad > 0:
        return [_MAD_K * (x - med) / mad for x in xs]
    mean_ad = statistics.fmean(deviations)
    if mean_ad > 0:
        return [(x - med) / (_MEANAD_K * mean_ad) for x in xs]
    return None


def modified_z_scores(values) -> list[float] | None:
    """Iglewicz-Hoaglin modified z-scores of the values the statistics take (see LIMIT), or None
    when they are undefined (n < 3, all equal)."""
    xs = list(split(values)[0])
    if len(xs) < Z_MIN_N:
        return None
    return _z_scores(xs, _median(sorted(xs)))


def _outliers(xs, scores) -> tuple[Outlier, ...]:
    if scores is None:
        return ()
    return tuple(Outlier(i, x, z) for i, (x, z) in enumerate(zip(xs, scores)) if abs(z) > OUTLIER_Z)


def outliers(values) -> tuple[Outlier, ...]:
    """The values flagged (|z| > OUTLIER_Z), none below OUTLIER_MIN_N values."""
    xs = split(values)[0]
    return _outliers(xs, modified_z_scores(xs)) if len(xs) >= OUTLIER_MIN_N else ()


def summarize(values) -> Summary:
    # one sort serves the median, the extremes and the outliers' median (tables summarize
    # every cell of a campaign)
    xs, aside = split(values)
    n = len(xs)
    if n == 0:
        return Summary(xs, 0, None, None, None, None, None, None, None, (), aside)
    ordered = sorted(xs)
    med = _median(ordered)
    mean = math.fsum(xs) / n
    if n < 2:
        return Summary(xs, n, mean, med, ordered[0], ordered[-1], None, None, None, (), aside)
    sd = stdev(xs, mean)
    cv = sd / abs(mean) if mean != 0 else None
    if cv is not None and not math.isfinite(cv):     # a mean that is all but zero
        cv = None
    half = t_quantile(n - 1) * sd / math.sqrt(n)
    found = _outliers(xs, _z_scores(xs, med)) if n >= OUTLIER_MIN_N else ()
    return Summary(xs, n, mean, med, ordered[0], ordered[-1], sd, cv, half, found, aside)


# A summary as bytes beside its values (a kept digest holds one per case and metric): loading
# bytes costs little, and a table unpacks only the cells it shows. Doubles round-trip exactly.
_PACKED = struct.Struct("<B7d")
_PACKED_OUTLIER = struct.Struct("<idd")
_ALL_PRESENT = (1 << 7) - 1


def pack(s: Summary) -> bytes:
    fields = (s.mean, s.median, s.min, s.max, s.stddev, s.cv, s.ci_half_width)
    present = sum(1 << i for i, f in enumerate(fields) if f is not None)
    return _PACKED.pack(present, *(0.0 if f is None else f for f in fields)) + b"".join(
        _PACKED_OUTLIER.pack(o.index, o.value, o.modified_z) for o in s.outliers)


def unpack(values, data: bytes) -> Summary:
    """The summary `pack` made of these values."""
    present, *fields = _PACKED.unpack_from(data)
    if present != _ALL_PRESENT:
        fields = [f if present >> i & 1 else None for i, f in enumerate(fields)]
    found = tuple(Outlier(*_PACKED_OUTLIER.unpack_from(data, at))
                  for at in range(_PACKED.size, len(data), _PACKED_OUTLIER.size)) \
        if len(data) > _PACKED.size else ()
    xs, aside = split(values)
    return Summary(xs, len(xs), *fields, found, aside)


@dataclass(frozen=True)
class Welch:
    t: float
    df: float
    p: float
    degenerate: bool = False       # both samples without spread: p is 0 or 1 by convention


def welch(a: Summary, b: Summary) -> Welch | None:
    """Welch's two-sided t-test of mean(b) - mean(a); None below n = 2 on either side."""
    if a.n < 2 or b.n < 2:
        return None
    va, vb = a.stddev ** 2 / a.n, b.stddev ** 2 / b.n
    diff = b.mean - a.mean
    if va + vb == 0:
        # No spread at all: the means either are equal or differ with certainty.
        return Welch(math.copysign(math.inf, diff) if diff else 0.0, a.n + b.n - 2,
                     0.0 if diff else 1.0, degenerate=True)
    t = diff / math.sqrt(va + vb)
    df = _welch_df(va, vb, a.n, b.n)
    p = 2 * t_sf(abs(t), df)
    return Welch(t, df, p)


def _welch_df(va: float, vb: float, na: int, nb: int) -> float:
    """Welch-Satterthwaite degrees of freedom of two variance terms (not both 0); scaled by
    the larger where their squares would leave the floats (they do not change the figure)."""
    if max(va, vb) > 1e100:
        big = max(va, vb)
        va, vb = va / big, vb / big
    return (va + vb) ** 2 / (va ** 2 / (na - 1) + vb ** 2 / (nb - 1))


def difference_ci(a: Summary, b: Summary, confidence: float = CONFIDENCE
                  ) -> tuple[float, float, float] | None:
    """mean(a) - mean(b) and its Welch interval; None below n = 2 on either side."""
    if a.n < 2 or b.n < 2:
        return None
    diff = a.mean - b.mean
    va, vb = a.stddev ** 2 / a.n, b.stddev ** 2 / b.n
    if va + vb == 0:
        return (diff, diff, diff)
    half = t_quantile(_welch_df(va, vb, a.n, b.n), confidence) * math.sqrt(va + vb)
    return (diff, diff - half, diff + half)


def ratio_ci(a: Summary, b: Summary, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
    """Interval of mean(b)/mean(a), delta method on the log ratio; None when undefined."""
    if a.n < 2 or b.n < 2 or not a.mean or not b.mean or a.mean < 0 or b.mean < 0:
        return None
    ratio = b.mean / a.mean
    # relative spreads: (s/m)^2 / n, which stays a float where s^2 / (n m^2) would not
    wa = (a.stddev / a.mean) ** 2 / a.n if a.stddev / a.mean < 1e100 else math.inf
    wb = (b.stddev / b.mean) ** 2 / b.n if b.stddev / b.mean < 1e100 else math.inf
    if not (math.isfinite(ratio) and ratio > 0 and math.isfinite(wa + wb)):
        return None         # a ratio or a spread beyond the floats: no interval to vouch for
    if wa + wb == 0:
        return (ratio, ratio)
    se = math.sqrt(wa + wb)
    k = t_quantile(_welch_df(wa, wb, a.n, b.n), confidence) * se
    if k > 700:             # exp(k) leaves the floats: the interval is unbounded
        return None
    return (ratio * math.exp(-k), ratio * math.exp(k))


def reps_needed(values, target_rel_half_width: float, confidence: float = CONFIDENCE) -> int | None:
    """Smallest n >= 2 with t(n-1) * CV / sqrt(n) <= target; None if the CV cannot be estimated."""
    if target_rel_half_width <= 0:
        raise ValueError("the target half-width must be positive")
    s = summarize(values)
    if s.cv is None:
        return None
    # t is above the normal's quantile z at every n, so no n below (z CV / h)^2 can do
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    start = (z * s.cv / target_rel_half_width) ** 2 if s.cv < 1e100 else math.inf
    for n in range(max(2, int(min(start, MAX_SUGGESTED_REPS))), MAX_SUGGESTED_REPS + 1):
        if t_quantile(n - 1, confidence) * s.cv / math.sqrt(n) <= target_rel_half_width:
            return n
    return MAX_SUGGESTED_REPS


def spearman(x, y) -> float | None:
    """Spearman's rank correlation (average ranks for ties); None below 3 pairs or without spread."""
    if len(x) != len(y) or len(x) < 3:
        return None
    if len(set(x)) < 2 or len(set(y)) < 2:
        return None
    rx, ry = _ranks(x), _ranks(y)
    mx, my = math.fsum(rx) / len(rx), math.fsum(ry) / len(ry)
    sxy = math.fsum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = math.fsum((a - mx) ** 2 for a in rx)
    syy = math.fsum((b - my) ** 2 for b in ry)
    return sxy / math.sqrt(sxx * syy)


def _ranks(values) -> list[float]:
    """Ranks from 1, ties given their average rank."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    return ranks


@dataclass(frozen=True)
class Slope:
    """A within-cell slope: estimate, 95% interval, two-sided p, degrees of freedom, points."""
    slope: float
    low: float
    high: float
    p: float
    df: int
    n: int


def within_slope(groups, confidence: float = CONFIDENCE) -> Slope | None:
    """The common slope of y on x inside groups of (x, y) pairs, each group's own means taken
    out (a regression with one intercept per group); None below 2 residual degrees of freedom
    or when x does not vary inside any group."""
    sxx = sxy = 0.0
    centred = []
    for pairs in groups:
        pairs = [(x, y) for x, y in pairs if usable(x) and usable(y)]
        if len(pairs) < 2:
            continue
        mx = math.fsum(x for x, _ in pairs) / len(pairs)
        my = math.fsum(y for _, y in pairs) / len(pairs)
        part = [(x - mx, y - my) for x, y in pairs]
        centred.append(part)
        sxx += math.fsum(x * x for x, _ in part)
        sxy += math.fsum(x * y for x, y in part)
    n = sum(len(c) for c in centred)
    df = n - len(centred) - 1
    if df < 2 or not sxx > 0:
        return None
    b = sxy / sxx
    rss = math.fsum((y - b * x) ** 2 for c in centred for x, y in c)
    se = math.sqrt(rss / df / sxx)
    if se == 0:
        return Slope(b, b, b, 0.0 if b else 1.0, df, n)
    half = t_quantile(df, confidence) * se
    return Slope(b, b - half, b + half, min(1.0, 2 * t_sf(abs(b) / se, df)), df, n)


@dataclass(frozen=True)
class Blocks:
    """The block effect of a two-way additive model (cell + block): the F test and each block's
    effect (a mean-zero log scale), with the points and cells of each block."""
    f: float
    df1: int
    df2: int
    p: float
    effects: tuple[float, ...]      # block k's effect, k = 0, 1, ...
    sizes: tuple[int, ...]          # points in block k
    n: int
    cells: int


def block_effects(groups, confidence: float = CONFIDENCE, tolerance: float = 1e-12) -> Blocks | None:
    """The F test of a block effect in y = cell + block + e, where `groups` holds each cell's
    (block, y) pairs (block: 0, 1, ...). None below 2 blocks with 2 cells each, or without a
    residual degree of freedom. Fitted by backfitting (alternating cell and block means of the
    other's residuals), which converges to the least-squares fit; balanced cells need one step."""
    cells = []
    for pairs in groups:
        pairs = [(int(b), y) for b, y in pairs if usable(y)]
        if len(pairs) >= 2:
            cells.append(pairs)
    counts: dict[int, int] = {}
    for pairs in cells:
        for b, _ in pairs:
            counts[b] = counts.get(b, 0) + 1
    blocks = sorted(b for b, k in counts.items() if k >= 2)
    if len(blocks) < 2:
        return None
    index = {b: i for i, b in enumerate(blocks)}
    cells = [[(index[b], y) for b, y in pairs if b in index] for pairs in cells]
    cells = [pairs for pairs in cells if len(pairs) >= 2]
    n, nb = sum(len(c) for c in cells), len(blocks)
    df2 = n - len(cells) - nb + 1
    if len(cells) < 2 or df2 < 1:
        return None
    means = [math.fsum(y for _, y in c) / len(c) for c in cells]
    rss0 = math.fsum((y - m) ** 2 for c, m in zip(cells, means) for _, y in c)
    beta = [0.0] * nb
    sizes = [0] * nb
    for c in cells:
        for b, _ in c:
            sizes[b] += 1
    for _ in range(1000):
        sums = [0.0] * nb
        for c, m in zip(cells, means):
            for b, y in c:
                sums[b] += y - m
        new = [s / k for s, k in zip(sums, sizes)]
        shift = math.fsum(new) / nb
        new = [v - shift for v in new]
        means = [math.fsum(y - new[b] for b, y in c) / len(c) for c in cells]
        moved = max(abs(a - b) for a, b in zip(new, beta))
        beta = new
        if moved <= tolerance * (1 + max(abs(v) for v in beta)):
            break
    rss1 = math.fsum((y - m - beta[b]) ** 2 for c, m in zip(cells, means) for b, y in c)
    gained = max(0.0, rss0 - rss1)
    if rss1 <= 0:
        f = math.inf if gained > 0 else 0.0
    else:
        f = (gained / (nb - 1)) / (rss1 / df2)
    return Blocks(f, nb - 1, df2, f_sf(f, nb - 1, df2), tuple(beta), tuple(sizes), n, len(cells))


DEPARTURE_SIMULATIONS = 4000


def _departure(ys) -> tuple[int, float]:
    """(index, D) of the largest departure from the median, in units of the median absolute
    successive difference; D is inf where that is 0 and a value departs, 0 where none does."""
    med = _median(sorted(ys))
    i = max(range(len(ys)), key=lambda k: abs(ys[k] - med))
    scale = _median(sorted(abs(b - a) for a, b in zip(ys, ys[1:])))
    gap = abs(ys[i] - med)
    if scale > 0:
        return i, gap / scale
    return i, math.inf if gap > 0 else 0.0


@functools.lru_cache(maxsize=64)
def _departures_under_no_drift(n: int) -> tuple[float, ...]:
    rng = random.Random(n)
    return tuple(sorted(_departure([rng.gauss(0.0, 1.0) for _ in range(n)])[1]
                        for _ in range(DEPARTURE_SIMULATIONS)))


@dataclass(frozen=True)
class Departure:
    index: int          # of the value furthest from the median
    gap: float          # that value minus the median
    d: float            # the statistic D
    p: float


def departure_test(ys) -> Departure | None:
    """The largest departure of a series (in time order) from its median, and its p against
    independent normal values (see the module's rules); None below 3 values."""
    ys = [y for y in ys if usable(y)]
    if len(ys) < 3:
        return None
    i, d = _departure(ys)
    sims = _departures_under_no_drift(len(ys))
    above = len(sims) - bisect.bisect_left(sims, d)
    return Departure(i, ys[i] - _median(sorted(ys)), d, (1 + above) / (1 + len(sims)))
