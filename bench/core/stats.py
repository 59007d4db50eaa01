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

    @property
    def half_width(self) -> float:
        return (self.hi - self.lo) / 2

    def fmt(self, digits: int = 3) -> str:
        """``0.731 [0.702, 0.760] n=5``; ``0.731 (n=1, no interval)`` for a single run."""
        if self.n == 0:
            return "n=0"
        m = f"{self.mean:.{digits}g}"
        if self.n < 2:
            return f"{m} (n=1, no interval)"
        return f"{m} [{self.lo:.{digits}g}, {self.hi:.{digits}g}] n={self.n}"


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
