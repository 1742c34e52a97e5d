"""Statistics across seeds for sweep results: summaries, normalisation to a baseline, Welch's
t-test and least-squares regression.

Pure numpy and pandas: the Student-t distribution is computed here from the regularized
incomplete beta function (Numerical Recipes' continued fraction, evaluated with the modified
Lentz method; Press et al., *Numerical Recipes*, 3rd ed., §6.4 and §5.2), so a results report
needs no scipy. The tests compare every function with scipy.

Conventions:

- ``stdev`` is the sample standard deviation (``ddof=1``); NaN when fewer than 2 values.
- ``q1`` / ``q3`` are numpy's default (linear-interpolation) 25th and 75th percentiles.
- ``ci95`` is the half-width of the 95% confidence interval of the mean,
  ``t_{0.975, n-1} * stdev / sqrt(n)``; NaN when fewer than 2 values.
- Null metric values (the results of failed runs) are ignored; a group whose every value is
  null is kept with ``n = 0`` and NaN statistics, so a configuration that never ran
  successfully still shows up.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable, List, Sequence

from ._native import VmemsimError

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "Regression",
    "WelchResult",
    "betainc",
    "linregress",
    "normalize",
    "summarize",
    "t_cdf",
    "t_ppf",
    "t_sf",
    "welch_t",
]

_EPS = 2.220446049250313e-16
_TINY = 1e-300
_MAX_CF_TERMS = 100_000

#: Columns of :func:`summarize` after the ``by`` columns, in order.
SUMMARY_COLUMNS = ["n", "mean", "median", "stdev", "min", "max", "q1", "q3", "ci95"]


# --------------------------------------------------------------------------------------------
# Regularized incomplete beta and the Student-t distribution


def _lbeta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _beta_cf(a: float, b: float, x: float) -> float:
    """Continued fraction of I_x(a, b) (Numerical Recipes eq. 6.4.5), by modified Lentz.
    Converges fast for x < (a + 1) / (a + b + 2)."""
    qab = a + b
    qap = a + 1.0
    qam = a - 1.0
    c = 1.0
    d = 1.0 - qab * x / qap
    if abs(d) < _TINY:
        d = _TINY
    d = 1.0 / d
    h = d
    for m in range(1, _MAX_CF_TERMS + 1):
        m2 = 2 * m
        # even step: d_{2m}
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        h *= d * c
        # odd step: d_{2m+1}
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        if abs(d) < _TINY:
            d = _TINY
        c = 1.0 + aa / c
        if abs(c) < _TINY:
            c = _TINY
        d = 1.0 / d
        delta = d * c
        h *= delta
        if abs(delta - 1.0) <= _EPS:
            return h
    raise ArithmeticError(
        f"incomplete beta continued fraction did not converge (a={a}, b={b}, x={x})"
    )


def _betainc_xy(a: float, b: float, x: float, y: float) -> float:
    """I_x(a, b) given both x and y = 1 - x (each computed without cancellation by the
    caller), so that values of x near 1 keep their precision."""
    if x <= 0.0:
        return 0.0
    if y <= 0.0:
        return 1.0
    if x < (a + 1.0) / (a + b + 2.0):
        front = math.exp(a * math.log(x) + b * math.log(y) - _lbeta(a, b))
        return front * _beta_cf(a, b, x) / a
    # symmetry I_x(a, b) = 1 - I_{1-x}(b, a), where the fraction converges fast
    front = math.exp(b * math.log(y) + a * math.log(x) - _lbeta(a, b))
    return 1.0 - front * _beta_cf(b, a, y) / b


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if not (a > 0 and b > 0):
        raise ValueError(f"betainc needs a > 0 and b > 0, got a={a}, b={b}")
    if not (0.0 <= x <= 1.0):
        raise ValueError(f"betainc needs 0 <= x <= 1, got x={x}")
    return _betainc_xy(float(a), float(b), float(x), 1.0 - float(x))


def _check_df(df: float) -> float:
    df = float(df)
    if not df > 0 or math.isinf(df):
        raise ValueError(f"degrees of freedom must be positive and finite, got {df}")
    return df


def _t_two_sided(t: float, df: float) -> float:
    """P(|T| >= |t|) for T ~ Student-t(df): I_{df/(df+t^2)}(df/2, 1/2)."""
    if math.isnan(t):
        return math.nan
    if math.isinf(t):
        return 0.0
    t2 = t * t
    denom = df + t2
    return _betainc_xy(df / 2.0, 0.5, df / denom, t2 / denom)


def t_sf(t: float, df: float) -> float:
    """Survival function P(T > t) of Student's t with ``df`` degrees of freedom."""
    df = _check_df(df)
    t = float(t)
    half = 0.5 * _t_two_sided(t, df)
    return half if t >= 0 else 1.0 - half


def t_cdf(t: float, df: float) -> float:
    """Cumulative distribution P(T <= t) of Student's t with ``df`` degrees of freedom."""
    df = _check_df(df)
    t = float(t)
    half = 0.5 * _t_two_sided(t, df)
    return 1.0 - half if t >= 0 else half


def _t_pdf(t: float, df: float) -> float:
    return math.exp(
        math.lgamma((df + 1.0) / 2.0)
        - math.lgamma(df / 2.0)
        - 0.5 * math.log(df * math.pi)
        - (df + 1.0) / 2.0 * math.log1p(t * t / df)
    )


def t_ppf(q: float, df: float) -> float:
    """Quantile function (inverse CDF) of Student's t: the t with ``t_cdf(t, df) == q``.

    Solves ``P(T > t) = tail`` for t >= 0 by Newton's method on the survival function,
    safeguarded by a bisection bracket, then applies the symmetry of the distribution."""
    df = _check_df(df)
    q = float(q)
    if not (0.0 <= q <= 1.0):
        raise ValueError(f"t_ppf needs 0 <= q <= 1, got q={q}")
    if q == 0.0:
        return -math.inf
    if q == 1.0:
        return math.inf
    if q == 0.5:
        return 0.0
    sign = 1.0 if q > 0.5 else -1.0
    tail = 1.0 - q if q > 0.5 else q  # the upper-tail probability of |t|

    def sf(t: float) -> float:
        return 0.5 * _t_two_sided(t, df)

    lo, hi = 0.0, 1.0
    while sf(hi) > tail:
        lo = hi
        hi *= 2.0
        if math.isinf(hi):
            return sign * math.inf
    t = 0.5 * (lo + hi)
    for _ in range(1000):
        f = sf(t) - tail
        if f == 0.0:
            break
        if f > 0:
            lo = t
        else:
            hi = t
        pdf = _t_pdf(t, df)
        step = f / pdf if pdf > 0 else math.inf
        t_new = t + step
        if not (lo < t_new < hi):
            t_new = 0.5 * (lo + hi)
        if abs(t_new - t) <= 4 * _EPS * abs(t_new) or hi - lo <= 4 * _EPS * hi:
            t = t_new
            break
        t = t_new
    return sign * t


# --------------------------------------------------------------------------------------------
# Tests and fits


@dataclass(frozen=True)
class WelchResult:
    """Welch's unequal-variances t-test: statistic, Welch–Satterthwaite degrees of freedom
    and two-sided p-value."""

    t: float
    df: float
    p: float


def _finite_array(values: Iterable[float], what: str):
    import numpy as np

    arr = np.asarray(list(values) if not hasattr(values, "__len__") else values, dtype=float)
    arr = arr.ravel()
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{what} contains NaN or infinite values")
    return arr


def welch_t(a: Sequence[float], b: Sequence[float]) -> WelchResult:
    """Two-sided Welch's t-test of equal means (``scipy.stats.ttest_ind(a, b,
    equal_var=False)``).

    Raises ValueError when a group has fewer than 2 values or a value is NaN/infinite. When
    both groups have zero variance the statistic is undefined (0/0 or x/0); then ``p`` is 1.0
    if the means are equal and 0.0 otherwise, ``t`` is 0.0 or ±inf accordingly, and ``df``
    is the pooled ``len(a) + len(b) - 2`` (Welch's formula is 0/0 there)."""
    x = _finite_array(a, "first group")
    y = _finite_array(b, "second group")
    if x.size < 2 or y.size < 2:
        raise ValueError(
            f"Welch's t-test needs at least 2 values per group, got {x.size} and {y.size}"
        )
    nx, ny = x.size, y.size
    mx, my = float(x.mean()), float(y.mean())
    vx, vy = float(x.var(ddof=1)), float(y.var(ddof=1))
    sx, sy = vx / nx, vy / ny
    se2 = sx + sy
    diff = mx - my
    if se2 == 0.0:
        df = float(nx + ny - 2)
        if diff == 0.0:
            return WelchResult(t=0.0, df=df, p=1.0)
        return WelchResult(t=math.copysign(math.inf, diff), df=df, p=0.0)
    t = diff / math.sqrt(se2)
    df = se2 * se2 / (sx * sx / (nx - 1) + sy * sy / (ny - 1))
    p = _t_two_sided(t, df)
    return WelchResult(t=t, df=df, p=min(1.0, p))


@dataclass(frozen=True)
class Regression:
    """Least-squares line ``y = slope * x + intercept``; ``r`` is Pearson's correlation and
    ``r2`` its square (the fraction of variance the line explains)."""

    slope: float
    intercept: float
    r: float
    r2: float
    n: int


def linregress(x: Sequence[float], y: Sequence[float]) -> Regression:
    """Ordinary least-squares fit of y on x (``scipy.stats.linregress``'s slope, intercept
    and rvalue).

    Raises ValueError for fewer than 2 points, lengths that differ, NaN/infinite values, or
    an x that never varies (the slope is undefined). When y never varies the slope is 0 and
    the correlation is undefined: ``r`` and ``r2`` are NaN."""
    xs = _finite_array(x, "x")
    ys = _finite_array(y, "y")
    if xs.size != ys.size:
        raise ValueError(f"x and y differ in length ({xs.size} and {ys.size})")
    if xs.size < 2:
        raise ValueError(f"a linear fit needs at least 2 points, got {xs.size}")
    mx, my = float(xs.mean()), float(ys.mean())
    dx, dy = xs - mx, ys - my
    sxx = float(dx @ dx)
    syy = float(dy @ dy)
    sxy = float(dx @ dy)
    if sxx == 0.0:
        raise ValueError("a linear fit needs x values that differ")
    slope = sxy / sxx
    intercept = my - slope * mx
    if syy == 0.0:
        r = math.nan
    else:
        r = max(-1.0, min(1.0, sxy / math.sqrt(sxx * syy)))
    return Regression(slope=slope, intercept=intercept, r=r, r2=r * r, n=int(xs.size))


# --------------------------------------------------------------------------------------------
# Tables


def _summary_row(values) -> List[float]:
    import numpy as np

    v = np.asarray(values, dtype=float)
    v = v[~np.isnan(v)]
    n = int(v.size)
    if n == 0:
        return [0] + [math.nan] * (len(SUMMARY_COLUMNS) - 1)
    mean = float(v.mean())
    q1, median, q3 = (float(q) for q in np.percentile(v, [25, 50, 75]))
    if n >= 2:
        stdev = float(v.std(ddof=1))
        ci95 = t_ppf(0.975, n - 1) * stdev / math.sqrt(n)
    else:
        stdev = ci95 = math.nan
    return [n, mean, median, stdev, float(v.min()), float(v.max()), q1, q3, ci95]


def summarize(df: "pd.DataFrame", by: List[str], metric: str) -> "pd.DataFrame":
    """One row per distinct combination of the ``by`` columns (in order of first appearance,
    null keys kept), with ``n, mean, median, stdev, min, max, q1, q3, ci95`` of ``metric``
    (see the module's conventions). ``by`` may be empty: one row for the whole table."""
    import pandas as pd

    by = list(by)
    for col in by + [metric]:
        if col not in df.columns:
            raise VmemsimError(f"summarize: no column {col!r} in the table")
    values = pd.to_numeric(df[metric], errors="coerce")
    if not by:
        return pd.DataFrame([_summary_row(values.to_numpy())], columns=SUMMARY_COLUMNS)
    rows = []
    grouped = values.groupby([df[c] for c in by], sort=False, dropna=False)
    for key, part in grouped:
        key = key if isinstance(key, tuple) else (key,)
        rows.append(list(key) + _summary_row(part.to_numpy()))
    out = pd.DataFrame(rows, columns=by + SUMMARY_COLUMNS)
    out["n"] = out["n"].astype("int64")
    return out


def normalize(
    df: "pd.DataFrame", metric: str, group: str, baseline, match: List[str]
) -> "pd.DataFrame":
    """A copy of ``df`` with ``<metric>_norm`` = metric / the metric of the baseline row (the
    row whose ``group`` equals ``baseline``) with equal ``match`` columns (e.g. x, facet and
    seed). The baseline rows themselves get exactly 1.0.

    Rows with no usable baseline (no baseline row matches, or its metric is null or 0) are
    dropped with a warning naming how many. Two baseline rows with the same match values are
    ambiguous: VmemsimError naming them (filter with ``where`` or add a facet)."""
    import numpy as np
    import pandas as pd

    match = [c for c in match if c != group]
    for col in [metric, group] + match:
        if col not in df.columns:
            raise VmemsimError(f"normalize: no column {col!r} in the table")
    is_base = df[group] == baseline
    if not is_base.any():
        raise VmemsimError(
            f"normalize: no row has {group} = {baseline!r} (values: "
            f"{', '.join(map(repr, pd.unique(df[group])))})"
        )
    out = df.copy()
    metric_values = pd.to_numeric(out[metric], errors="coerce").astype(float)
    base = out.loc[is_base, match].copy()
    base["__base"] = metric_values[is_base].to_numpy()
    if match:
        dup = base.duplicated(subset=match, keep=False)
        if dup.any():
            first = base.loc[dup, match].iloc[0].to_dict()
            raise VmemsimError(
                f"normalize: {int(dup.sum())} {group} = {baseline!r} rows share match values, "
                f"e.g. {first}; the baseline is ambiguous (filter with 'where' or add a facet)"
            )
        keys = out[match].copy()
        keys["__row"] = np.arange(len(out))
        merged = keys.merge(base, on=match, how="left", sort=False)
        merged = merged.sort_values("__row", kind="stable")
        base_values = merged["__base"].to_numpy(dtype=float)
    else:
        if len(base) > 1:
            raise VmemsimError(
                f"normalize: {len(base)} rows have {group} = {baseline!r} and no match columns "
                "tell them apart"
            )
        base_values = np.full(len(out), float(base["__base"].iloc[0]))
    usable = ~np.isnan(base_values) & (base_values != 0.0)
    dropped = int((~usable).sum())
    if dropped:
        warnings.warn(
            f"normalize: dropped {dropped} of {len(out)} rows with no usable {group} = "
            f"{baseline!r} baseline (none with equal {', '.join(match) or 'values'}, or its "
            f"{metric} is null or 0)",
            stacklevel=2,
        )
    with np.errstate(invalid="ignore", divide="ignore"):
        norm = metric_values.to_numpy() / base_values
    out[f"{metric}_norm"] = norm
    return out[usable].reset_index(drop=True)
