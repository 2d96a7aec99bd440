"""Student's t and Snedecor's F distributions in floats (survival functions and quantiles),
from the regularized incomplete beta function: the same numbers as scipy.special's stdtr,
stdtrit and fdtrc (to about 1e-12 relative for df up to 1e5; tests compare them) without
importing SciPy, which took most of a short command's time. stats.py states the rules that use
them."""

from __future__ import annotations

import functools
import math
from statistics import NormalDist

CONFIDENCE = 0.95          # the level of every interval iolab states

_TINY = 1e-300
_EPS = 1e-16
_MAX_TERMS = 100000


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz). A value within
    _TINY of zero (or nan) becomes _TINY; tested without abs() and with local names: a
    campaign's comparison runs this loop a million times."""
    tiny, eps = _TINY, _EPS
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if d > tiny or d < -tiny else tiny)
    h = d
    for m in range(1, _MAX_TERMS):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if d > tiny or d < -tiny else tiny)
        c = 1.0 + aa / c
        if not (c > tiny or c < -tiny):
            c = tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if d > tiny or d < -tiny else tiny)
        c = 1.0 + aa / c
        if not (c > tiny or c < -tiny):
            c = tiny
        step = d * c
        h *= step
        if -eps < step - 1.0 < eps:
            return h
    raise ArithmeticError(f"incomplete beta: no convergence for a={a}, b={b}, x={x}")


def _beta_series(a: float, b: float, x: float) -> float:
    """a B(a, b) I_x(a, b) / (x^a y^b) as the power series sum_n prod_k<n (a+b+k)/(a+1+k) x
    (positive terms, so no cancellation), for x where it converges in a few dozen terms."""
    total = term = 1.0
    s, r = a + b, a + 1.0
    n = 0.0
    while term > total * 1e-17:
        term *= (s + n) / (r + n) * x
        total += term
        n += 1.0
    return total


def _series_fits(a: float, b: float, x: float) -> bool:
    """_beta_series takes fewer steps than _beta_fraction: x small, and few terms while they grow."""
    return x <= 0.25 and (a + b) * x <= 16.0


def _stirling_tail(x: float) -> float:
    """lgamma(x) - ((x - 1/2) log x - x + log(2 pi)/2), for x >= 10."""
    r = 1.0 / (x * x)
    return (1 / 12 - r * (1 / 360 - r * (1 / 1260 - r * (1 / 1680 - r / 1188)))) / x


def _log_beta(a: float, b: float) -> float:
    """log B(a, b); for a large a as a difference of Stirling series, where three lgammas of
    nearly equal size would cancel most digits."""
    big, small = max(a, b), min(a, b)
    if big < 10:
        return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)
    # lgamma(big) - lgamma(big + small), then + lgamma(small)
    ratio = (-(big - 0.5) * math.log1p(small / big) - small * math.log(big + small) + small
             + _stirling_tail(big) - _stirling_tail(big + small))
    return math.lgamma(small) + ratio


def _ibeta(a: float, b: float, x: float, y: float, log_x: float, log_y: float) -> float:
    """I_x(a, b) with y = 1 - x and both logs given to full precision by the caller."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    front = math.exp(a * log_x + b * log_y - _log_beta(a, b))
    if x < (a + 1.0) / (a + b + 2.0):
        if _series_fits(a, b, x):
            return front * _beta_series(a, b, x) / a
        if _series_fits(b, a, y):
            # from the other side, where the series is short: 1 - I_y(b, a), while the
            # subtraction costs little more than a digit (a 95% quantile's tail is 1 - 0.95)
            rest = front * _beta_series(b, a, y) / b
            if rest <= 0.96:
                return 1.0 - rest
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * (_beta_series(b, a, y) if _series_fits(b, a, y) else _beta_fraction(b, a, y)) / b


def t_sf(t: float, df: float) -> float:
    """P(T > t) for Student's t with df degrees of freedom."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    if t == 0:
        return 0.5
    t2 = t * t
    if math.isinf(t2):      # |t| above 1e154: a tail below any float
        return 0.0 if t > 0 else 1.0
    x, y = df / (df + t2), t2 / (df + t2)
    tail = 0.5 * _ibeta(df / 2.0, 0.5, x, y, -math.log1p(t2 / df), math.log(y))
    return tail if t > 0 else 1.0 - tail


def _t_pdf(t: float, df: float) -> float:
    # 1 / (sqrt(df) B(df/2, 1/2)) (1 + t^2/df)^(-(df+1)/2)
    return math.exp(-_log_beta(df / 2, 0.5) - 0.5 * math.log(df) - (df + 1) / 2 * math.log1p(t * t / df))


@functools.lru_cache(maxsize=64)
def _normal_quantile(p: float) -> float:
    """The standard normal's quantile, once per probability: a t quantile asks for the same
    one at every degree of freedom (a comparison's pairs each have their own)."""
    return NormalDist().inv_cdf(p)


def _hill(q: float, df: float) -> float:
    """Hill's approximation of the upper t quantile (Algorithm 396, 1970; as R's qt starts),
    good to about 1e-6 for df > 1."""
    a = 1 / (df - 0.5)
    b = 48 / (a * a)
    c = ((20700 * a / b - 98) * a - 16) * a + 96.36
    d = ((94.5 / (b + c) - 3) / b + 1) * math.sqrt(a * math.pi / 2) * df
    y = (d * 2 * q) ** (2 / df)
    if y > 0.05 + a:
        x = _normal_quantile(q)
        y = x * x
        if df < 5:
            c += 0.3 * (df - 4.5) * (x + 0.6)
        c = (((0.05 * d * x - 5) * x - 7) * x - 2) * x + b + c
        y = (((((0.4 * y + 6.3) * y + 36) * y + 94.5) / c - y - 3) / b + 1) * x
        y = math.expm1(a * y * y)
    else:
        y = ((1 / (((df + 6) / (df * y) - 0.089 * d - 0.822) * (df + 2) * 3) + 0.5 / (df + 4)) * y - 1) \
            * (df + 1) / (df + 2) + 1 / y
    return math.sqrt(df * y)


def t_isf(q: float, df: float) -> float:
    """The t with P(T > t) = q, 0 < q < 1/2 (an upper quantile)."""
    if df == 1:
        return math.tan(math.pi * (0.5 - q))
    if df == 2:
        return (1 - 2 * q) * math.sqrt(2 / (4 * q * (1 - q)))
    lo, hi = _normal_quantile(1 - q), math.inf        # the normal's is below any t's
    t = _hill(q, df) if df > 1 else lo
    # Newton on the survival function, kept inside the bracket. Once a step is below 1e-5 of t
    # the last one is Halley's (the pdf's own slope, -(df+1) t / (df+t^2), is known): its error
    # is cubic in the step, about 1e-15 of t, so Hill's start usually needs one evaluation of
    # the survival function instead of two
    for _ in range(200):
        if not lo < t < hi:
            t = (lo + hi) / 2 if hi < math.inf else 2 * lo + 1
        f = t_sf(t, df) - q
        if f > 0:
            lo = t
        else:
            hi = t
        step = f / _t_pdf(t, df)
        if abs(step) <= 1e-5 * t:
            halley = step / (1 - step * (df + 1) * t / (2 * (df + t * t)))
            if lo <= t + halley <= hi:
                return t + halley
        t += step
    return t


@functools.lru_cache(maxsize=4096)
def t_quantile(df: float, confidence: float = CONFIDENCE) -> float:
    """Two-sided Student t critical value: t(1 - (1 - confidence)/2, df), once per df."""
    return t_isf((1 - confidence) / 2, df)


def f_sf(f: float, df1: float, df2: float) -> float:
    """P(F > f) for Snedecor's F with (df1, df2) degrees of freedom (the regularized incomplete
    beta function, as t_sf)."""
    if not f > 0:
        return 1.0
    if math.isinf(f):
        return 0.0
    x = df2 / (df2 + df1 * f)          # P(F > f) = I_x(df2/2, df1/2)
    y = df1 * f / (df2 + df1 * f)
    return min(1.0, max(0.0, _ibeta(df2 / 2.0, df1 / 2.0, x, y, math.log(x), math.log(y))))
