"""Statistics over seed replicates: confidence intervals and paired comparisons (scipy).

Every place seqbench states a configuration's result over seeds uses :func:`mean_ci`; every place it
compares two configurations that share seeds uses :func:`paired`. Both say ``n`` so a reader can see
when a statement rests on one run. No torch here: reports and verdicts import this module alone.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np
from scipy import stats as _st

LEVEL = 0.95
_NOISE = 1e-12  # relative spread below this is float rounding (equal values summed differently), not data


@dataclass(frozen=True)
class Interval:
    """Mean of ``n`` finite values with a two-sided Student-t confidence interval.

    ``lo``/``hi`` are NaN when n < 2 (one run has no interval); ``std`` is the sample std (ddof=1).
    """

    mean: float
    lo: float
    hi: float
    n: int
    std: float
    level: float = LEVEL
    scale: str = "linear"  # "log": mean is the geometric mean; "rate": the share of seeds that succeeded

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def fmt(self, digits: int = 3) -> str:
        """``0.731 [0.702, 0.760] n=5``; ``0.731 (n=1, no interval)`` for a single run."""
        if self.n == 0:
            return "n=0"
        m = f"{self.mean:.{digits}g}"
        if self.scale == "rate":
            m = f"{round(self.mean * self.n)}/{self.n} seeds"
        elif self.scale == "log":
            m = f"geo-mean {m}"
        if self.n < 2 and self.scale != "rate":
            return f"{m} (n=1, no interval)"
        pct = "" if abs(self.level - LEVEL) < 1e-9 else f" {100 * self.level:.4g}%"
        return f"{m} [{self.lo:.{digits}g}, {self.hi:.{digits}g}]{pct} n={self.n}"


def mean_ci(values: Sequence[float], level: float = LEVEL) -> Interval:
    """Mean and Student-t interval of the finite values (NaN/inf, e.g. diverged seeds, are dropped)."""
    x = np.asarray([v for v in values if v is not None and math.isfinite(v)], dtype=float)
    n = int(x.size)
    if n == 0:
        return Interval(math.nan, math.nan, math.nan, 0, math.nan, level)
    mean = float(x.mean())
    if n < 2:
        return Interval(mean, math.nan, math.nan, 1, math.nan, level)
    std = float(x.std(ddof=1))
    if std <= _NOISE * float(np.abs(x).max()):  # equal values: no spread, a point interval
        return Interval(mean, mean, mean, n, 0.0, level)
    lo, hi = _st.t.interval(level, df=n - 1, loc=mean, scale=std / math.sqrt(n))
    return Interval(mean, float(lo), float(hi), n, std, level)


@dataclass(frozen=True)
class Paired:
    """A paired comparison of a against b over shared seeds: difference a - b."""

    diff: Interval  # mean difference and its t interval
    p_t: float  # paired t-test two-sided p (NaN for n < 2 or zero variance)
    p_wilcoxon: float  # Wilcoxon signed-rank two-sided p (NaN for n < 2, all-zero or undefined)
    effect_size: float  # Cohen's d_z = mean(diff) / sd(diff) (inf-free: NaN when sd == 0)
    n: int


def paired(a: Sequence[float], b: Sequence[float], level: float = LEVEL) -> Paired:
    """Compare two equal-length seed-aligned samples; pairs where either side is not finite are dropped."""
    if len(a) != len(b):
        raise ValueError(f"paired samples need equal lengths, got {len(a)} and {len(b)}")
    pairs = [(x, y) for x, y in zip(a, b)
             if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)]
    d = np.asarray([x - y for x, y in pairs], dtype=float)
    n = int(d.size)
    diff = mean_ci(d.tolist(), level)
    p_t = p_w = d_z = math.nan
    if n >= 2 and diff.std > 0:
        p_t = float(_st.ttest_rel([x for x, _ in pairs], [y for _, y in pairs]).pvalue)
        d_z = diff.mean / diff.std
    if n >= 2 and np.any(d != 0):  # one pair has no test (scipy would answer p=1)
        try:
            p_w = float(_st.wilcoxon(d).pvalue)
        except ValueError:
            p_w = math.nan
    return Paired(diff, p_t, p_w, d_z, n)


# -- judging a claim over few seeds (sweeps/claims/judge.py) ------------------------------------
# Few seeds (3-12) per configuration: intervals must be exact or on a scale where the t approximation
# is fair, and never leave the metric's range. rliable (Agarwal et al. 2021, "Deep RL at the Edge of
# the Statistical Precipice") argues for interval estimates over point estimates at few runs and for
# judging per-run outcomes; we follow that with exact binomial intervals for solved / not solved, but
# do not use its percentile bootstrap: with 3-5 runs of ONE configuration it under-covers (the
# bootstrap interval cannot be wider than the sample's range).

SCALES = ("linear", "log", "rate")


@dataclass(frozen=True)
class Estimate:
    """The seeds' values of one quantity and how to estimate it.

    ``scale``: ``linear`` (mean, Student-t), ``log`` (geometric mean, Student-t on log values: for
    positive skewed metrics such as MSE and loss, whose interval then stays > 0), ``rate`` (values are
    0/1 per seed: success rate with an exact Clopper-Pearson interval). ``bounds`` is the metric's
    range; a linear interval is clipped to it (the mean cannot lie outside it)."""

    values: tuple[float, ...]
    scale: str = "linear"
    bounds: tuple[float, float] = (-math.inf, math.inf)

    def __post_init__(self) -> None:
        if self.scale not in SCALES:
            raise ValueError(f"scale: one of {', '.join(SCALES)} (got {self.scale!r})")
        if self.scale == "log" and any(v <= 0 for v in self.values):
            raise ValueError("a log-scale estimate needs positive values")

    @property
    def n(self) -> int:
        return len(self.values)

    def interval(self, level: float = LEVEL) -> Interval:
        x = np.asarray(self.values, dtype=float)
        if self.scale == "rate":
            k, n = int(round(x.sum())), self.n
            if n == 0:
                return Interval(math.nan, math.nan, math.nan, 0, math.nan, level, "rate")
            ci = _st.binomtest(k, n).proportion_ci(confidence_level=level, method="exact")
            return Interval(k / n, float(ci.low), float(ci.high), n, float(x.std(ddof=1)) if n > 1 else math.nan,
                            level, "rate")
        if self.scale == "log":
            iv = mean_ci(np.log(x).tolist(), level)
            f = (lambda v: math.exp(v)) if iv.n else (lambda v: v)
            return Interval(f(iv.mean), f(iv.lo), f(iv.hi), iv.n, iv.std, level, "log")
        iv = mean_ci(x.tolist(), level)
        lo_b, hi_b = self.bounds
        clip = (lambda v: min(max(v, lo_b), hi_b)) if not math.isnan(iv.lo) else (lambda v: v)
        return Interval(iv.mean, clip(iv.lo), clip(iv.hi), iv.n, iv.std, level)

    def p_value(self, threshold: float, side: str) -> float:
        """One-sided p for "the quantity is ``side`` (below/above) ``threshold``" (exact binomial for a
        rate, one-sample t otherwise); 0 or 1 when the seeds agree exactly (no spread, no test)."""
        if side not in ("below", "above"):
            raise ValueError(side)
        alt = "less" if side == "below" else "greater"
        x = np.asarray(self.values, dtype=float)
        if self.scale == "rate":
            if not 0 < threshold < 1:
                raise ValueError(f"a success-rate threshold is in (0, 1), got {threshold}")
            return float(_st.binomtest(int(round(x.sum())), self.n, threshold, alternative=alt).pvalue)
        if self.n < 2:
            return math.nan
        if self.scale == "log":
            if threshold <= 0:  # every positive value is above a threshold <= 0
                return 0.0 if side == "above" else 1.0
            x, threshold = np.log(x), math.log(threshold)
        if x.std(ddof=1) <= _NOISE * float(np.abs(x).max()):  # equal values: the answer is certain
            m = float(x.mean())
            return 0.0 if (m < threshold if side == "below" else m > threshold) else 1.0
        return float(_st.ttest_1samp(x, threshold, alternative=alt).pvalue)


@dataclass(frozen=True)
class MedianInterval:
    """The median of ``n`` values and a distribution-free interval for it from two order statistics,
    ``[x_(j), x_(n-j+1)]``, whose exact coverage (binomial, Thompson 1936) is ``coverage``: the widest
    achievable is ``[min, max]`` at ``1 - 2 * 0.5**n`` (75% for n=3, 94% for n=5; 95% needs n >= 6)."""

    median: float  # the lower median x_(ceil(n/2)): a value the data took (a rung, not between two)
    lo: float
    hi: float
    n: int
    coverage: float  # P(lo <= true median <= hi) >= coverage, exact for continuous values


def median_interval(values: Sequence[float], level: float = LEVEL) -> MedianInterval:
    """The narrowest order-statistic interval for the median with coverage >= ``level``, or [min, max]
    with its (lower) coverage when ``n`` is too small for ``level``; NaNs when there are no values."""
    x = sorted(float(v) for v in values if v is not None and math.isfinite(v))
    n = len(x)
    if n == 0:
        return MedianInterval(math.nan, math.nan, math.nan, 0, math.nan)
    j = 1  # 1-based rank of the lower bound
    while j < n // 2 and 1 - 2 * _st.binom.cdf(j, n, 0.5) >= level:  # can rank j+1 still cover?
        j += 1
    coverage = float(1 - 2 * _st.binom.cdf(j - 1, n, 0.5))
    return MedianInterval(x[(n + 1) // 2 - 1], x[j - 1], x[n - j], n, coverage)


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values (Holm 1979; as statsmodels' multipletests(method="holm")):
    sorted ascending, p_(i) * (m - i), made monotone; NaN stays NaN and is not counted in m."""
    idx = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    order = sorted(idx, key=lambda i: pvalues[i])
    m = len(order)
    out = [math.nan] * len(pvalues)
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def holm_divisors(pvalues: Sequence[float]) -> list[int]:
    """The divisor of alpha Holm tests each p-value at (m for the smallest, m-1 for the next, ...):
    the level at which to show that quantity's interval so the interval agrees with the decision."""
    idx = [i for i, p in enumerate(pvalues) if not math.isnan(p)]
    order = sorted(idx, key=lambda i: pvalues[i])
    out = [1] * len(pvalues)
    for rank, i in enumerate(order):
        out[i] = len(order) - rank
    return out
