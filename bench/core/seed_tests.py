"""One configuration's seeds, or two configurations' seed pairs, stated by the procedure ``seqbench verify``
judges that kind of metric with (``sweeps/claims/judge.py``), so compare, the report and verify never
print two statistics for one quantity. Pure: numbers in, numbers and sentences out (scipy, no torch).

Which procedure, from the metric's name (``stats.metric_scale``), as the judge picks it:

- **bounded** in [0, 1] (accuracy, exact match, solved, shares): seeds pile up at 1.0 or jump between
  plateaus, so a mean's t-test is no test (three seeds at 1.0 are zero spread, not certainty). A pair is
  judged per seed: the share of seeds on which A beats B, with its exact Clopper-Pearson interval, and an
  exact two-sided sign test over the seeds that are not tied (ties are counted and said). One
  configuration is its mean with a t interval kept in [0, 1], the share of seeds at 1 with its exact
  interval when every seed scored 0 or 1, and its value alone when every seed tied ("1 on all 3 seeds").
- **log-scale** (loss, MSE, bpc, perplexity, norms): positive and skewed; the geometric mean, t on the
  logs (the interval stays above 0); a pair is the geometric mean of the per-seed ratios A/B, tested on
  the log ratios as the judge tests a mean (``Estimate.p_value``).
- **other** metrics: the mean with a t interval; a pair is the mean difference, tested as the judge
  tests a mean: the paired t (with Cohen's d_z, which only this procedure reports: on a bounded metric
  it blows up on ties), or exact sign flips where the differences sit on a lattice (ties among them;
  ``Estimate.p_value`` decides, so compare follows the judge).

A pair whose seeds all differ by the same amount (or ratio) goes per seed whatever the metric: there is
no spread for a t-test (the judge leaves such a mean untested), and the sign test needs only the signs
(its null is "A ahead on half the seeds"). That switch looks at the values, which the judge avoids; it
only ever moves to an exact test, whose error rate holds for any distribution of the differences.

Each pair states the smallest p its procedure could reach at its n: a sign test (or exact sign flips)
over m untied seeds cannot go below ``2 * 0.5**m`` (3 of 3 seeds give p = 0.25, 10 of 10 give 0.002), so
below 6 seeds it cannot decide anything at 5% and the sentence says so instead of leaving a p to be
misread.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from scipy import stats as _st

from seqbench.bench.core.stats import LEVEL, Estimate, Interval, clopper_pearson, metric_scale, paired
from seqbench.bench.core.text import MISSING

ALPHA = 0.05  # the level a statement "can decide" at (the judge's schema.ALPHA, one look)
BOUNDED, LOG, LINEAR = "bounded", "log", "linear"  # kinds of metric
SIGN, RATIO, PAIRED_T, NO_TEST = "sign test", "paired t on log ratios", "paired t", "no test"  # procedures
# where the judge tests a mean by exact sign flips instead of t (lattice values: ``Estimate.p_value``)
SIGN_FLIP, SIGN_FLIP_LOG = "exact sign-flip test", "exact sign-flip test on log ratios"
_RATIOS, _DIFFERENCES = (RATIO, SIGN_FLIP_LOG), (PAIRED_T, SIGN_FLIP)
_NOISE = 1e-12  # relative spread below this is float rounding, not data (as bench.core.stats)
_PREFIX = re.compile(r"^(objective:|trial_value:|final\.|best\.|baseline\.|eval\.)")


def metric_kind(metric: str) -> str:
    """``bounded`` (in [0, 1]), ``log`` (positive, skewed) or ``linear``, from the metric's name or its
    table column (``objective:val/acc``, ``final.test@40/acc``), as ``stats.metric_scale`` reads it."""
    scale, bounds = metric_scale(_PREFIX.sub("", metric))
    if bounds == (0.0, 1.0):
        return BOUNDED
    return LOG if scale == "log" else LINEAR


def _finite(values: Sequence[float | None]) -> list[float]:
    return [float(v) for v in values if v is not None and math.isfinite(v)]


def _tied(x: Sequence[float]) -> bool:
    """Every value the same up to float rounding (two or more values)."""
    a = np.asarray(x, dtype=float)
    return a.size >= 2 and bool(a.std(ddof=1) <= _NOISE * max(float(np.abs(a).max()), 1e-300))


def smallest_sign_p(m: int) -> float:
    """The smallest two-sided p an exact sign test over ``m`` untied seeds can give: all m on one side."""
    return min(1.0, 2 * 0.5**m) if m > 0 else math.nan


def seeds_to_decide(alpha: float = ALPHA) -> int:
    """The fewest untied seeds at which a sign test can reach ``alpha`` (6 at 0.05: 2 x 0.5^6 = 0.031)."""
    m = 1
    while smallest_sign_p(m) > alpha:
        m += 1
    return m


def _p(p: float) -> str:
    """``=0.031``, ``<0.001`` or ``=n/a``: the text after ``p``."""
    if p != p:
        return "=n/a"
    return "<0.001" if p < 0.001 else f"={p:.2g}"


# -- one configuration -----------------------------------------------------------------------------
EMPTY, ONE, TIED, SHARE = "empty", "one", "tied", "share"  # SeedSummary.form besides LOG and LINEAR


@dataclass(frozen=True)
class SeedSummary:
    """One configuration's seeds as the judge would state them. ``form``: ``empty``, ``one`` (one seed: no
    interval), ``tied`` (every seed the same value: the value alone, no interval, ``lo``/``hi`` NaN),
    ``share`` (a bounded metric whose seeds all scored 0 or 1: ``value`` is the share at 1, exact
    Clopper-Pearson ``lo``/``hi``), ``log`` (geometric mean, t interval on the logs) or ``linear`` (mean,
    t interval, kept inside the metric's range). ``std`` is the plain sample std of the values."""

    kind: str
    form: str
    value: float
    lo: float
    hi: float
    n: int
    std: float
    level: float = LEVEL

    def fmt(self, digits: int = 3) -> str:
        return fmt_summary(self.form, self.value, self.lo, self.hi, self.n, digits, self.level)


def summarize(metric: str, values: Sequence[float | None], level: float = LEVEL) -> SeedSummary:
    """``metric``'s finite seed values of one configuration (NaN/inf, e.g. diverged seeds, dropped)."""
    x = _finite(values)
    kind, n = metric_kind(metric), len(x)
    nan = math.nan
    if n == 0:
        return SeedSummary(kind, EMPTY, nan, nan, nan, 0, nan, level)
    std = float(np.std(x, ddof=1)) if n > 1 else nan
    if n == 1:
        return SeedSummary(kind, ONE, x[0], nan, nan, 1, nan, level)
    if _tied(x):
        return SeedSummary(kind, TIED, float(np.mean(x)), nan, nan, n, 0.0, level)
    if kind == BOUNDED and all(v in (0.0, 1.0) for v in x):
        iv = Estimate(tuple(x), "rate").interval(level)
        return SeedSummary(kind, SHARE, iv.mean, iv.lo, iv.hi, n, std, level)
    if kind == LOG and all(v > 0 for v in x):
        iv = Estimate(tuple(x), "log").interval(level)
        return SeedSummary(kind, LOG, iv.mean, iv.lo, iv.hi, n, std, level)
    bounds = metric_scale(_PREFIX.sub("", metric))[1]
    iv = Estimate(tuple(x), "linear", bounds).interval(level)
    return SeedSummary(kind, LINEAR, iv.mean, iv.lo, iv.hi, n, std, level)


def fmt_summary(form: str, value: float, lo: float, hi: float, n: int, digits: int = 3, level: float = LEVEL) -> str:
    """A configuration's cell: ``0.731 [0.702, 0.76] n=5``, ``geo-mean 0.12 [0.09, 0.16] n=5``,
    ``2/3 seeds at 1 [0.0943, 0.992] n=3``, ``1 on all 3 seeds`` or ``0.81 (n=1, no interval)``."""
    if form == EMPTY or n == 0 or value != value:
        return MISSING
    v = f"{value:.{digits}g}"
    if form == ONE or n == 1:
        return f"{v} (n=1, no interval)"
    if form == TIED or lo != lo or hi != hi:
        return f"{v} on all {n} seeds"
    pct = "" if abs(level - LEVEL) < 1e-9 else f" {100 * level:.4g}%"
    iv = f"[{lo:.{digits}g}, {hi:.{digits}g}]{pct} n={n}"
    if form == SHARE:
        return f"{round(value * n)}/{n} seeds at 1 {iv}"
    return f"geo-mean {v} {iv}" if form == LOG else f"{v} {iv}"


# -- two configurations on the same seeds ---------------------------------------------------------
@dataclass(frozen=True)
class PairTest:
    """A (the better level by the study's goal) against B over the seeds they share, by ``test``:

    - ``sign test``: ``share`` is the share of seeds A is ahead on (exact interval), ``p`` the exact
      two-sided sign test over the ``n - tied`` untied seeds;
    - ``paired t on log ratios``: ``ratio`` is the geometric mean of A/B per seed with its t interval on
      the logs, ``p`` the paired t on the log ratios (``exact sign-flip test on log ratios`` where the
      judge tests such a mean by exact sign flips, its interval the one that agrees with that test);
    - ``paired t``: ``diff`` carries the t interval of the mean difference, ``p`` the paired t-test,
      ``effect_size`` Cohen's d_z (``exact sign-flip test``: as for the ratios, no d_z);
    - ``no test``: fewer than 2 shared seeds.

    ``diff.mean`` is the mean difference A - B under every test (its interval only under the paired t).
    ``best_p`` is the smallest p the test could give at this n (0 for a t-test, ``2 * 0.5**m`` for a sign
    test or sign flips over m untied seeds); ``why`` says why this test."""

    kind: str
    test: str
    why: str
    n: int
    ahead: int  # seeds on which A is better than B (by the goal)
    behind: int
    tied: int
    diff: Interval
    p: float
    best_p: float
    share: Interval | None = None
    ratio: Interval | None = None
    effect_size: float = math.nan
    alpha: float = ALPHA

    @property
    def can_decide(self) -> bool:
        """Whether the test could reach ``alpha`` at this n had every seed agreed."""
        return self.best_p == self.best_p and self.best_p <= self.alpha

    @property
    def estimate(self) -> Interval:
        """What the test is about: the share ahead, the ratio, or the difference."""
        return self.share if self.share is not None else self.ratio if self.ratio is not None else self.diff

    @property
    def measure(self) -> str:
        if self.test == SIGN:
            return "share of seeds ahead"
        return "ratio A/B" if self.test in _RATIOS else "difference A-B" if self.test in _DIFFERENCES else ""

    @property
    def untied(self) -> int:
        return self.n - self.tied

    def undecidable(self) -> str:
        """``n=3 cannot decide at 5%`` (``too few to decide at 5%`` where tied seeds left too few untied),
        and, when the untied seeds did not all agree, what all agreeing gives; empty when the test could
        decide at this n."""
        if self.can_decide or self.test == NO_TEST or not self.untied:
            return ""
        m, pct = self.untied, f"{100 * self.alpha:g}%"
        head = f"n={self.n} cannot decide" if not self.tied else "too few to decide"
        agree = max(self.ahead, self.behind) == m
        return f"{head} at {pct}" + ("" if agree else f" ({m} of {m} seeds would give p={self.best_p:.2g})")

    def sentence(self, what: str, winner: str, metric: str) -> str:
        """The full statement: ``transformer vs rnn at task.delay=12: transformer ahead on 3 of 3 seeds
        (share [0.292, 1], +0.781 val/acc), sign test p=0.25: n=3 cannot decide at 5%``."""
        d = self.diff.mean
        if self.test == NO_TEST:
            return f"{what}: {d:+.3g} {metric} (n={self.n} shared seed: no interval, no test)"
        tail = self.undecidable()
        tail = f": {tail}" if tail else ""
        if self.test in _RATIOS:
            r = self.ratio
            assert r is not None
            return (
                f"{what}: x{r.mean:.3g} {metric} (geometric mean of the per-seed ratios), 95% CI "
                f"[{r.lo:.3g}, {r.hi:.3g}], {self.test} p{_p(self.p)}, n={self.n}{tail}"
            )
        if self.test in _DIFFERENCES:
            dz = f", d={self.effect_size:.2g}" if self.test == PAIRED_T else ""
            return (
                f"{what}: {d:+.3g} {metric}, 95% CI [{self.diff.lo:.3g}, {self.diff.hi:.3g}], {self.test} "
                f"p{_p(self.p)}{dz}, n={self.n}{tail}"
            )
        if not self.untied:
            return f"{what}: the same {metric} on each of {self.n} seeds (no seed ahead: nothing to test)"
        s = self.share
        assert s is not None
        each = " on each" if self.diff.std == 0 else ""
        ties = f", {self.tied} tied" if self.tied else ""
        over = f" over the {self.untied} untied seed{'s' if self.untied > 1 else ''}" if self.tied else ""
        return (
            f"{what}: {winner} ahead on {self.ahead} of {self.n} seeds{ties} (share [{s.lo:.3g}, {s.hi:.3g}], "
            f"{d:+.3g} {metric}{each}), sign test{over} p{_p(self.p)}{tail}"
        )

    def short(self) -> str:
        """The headline's clause after the pair's name: ``ahead on 3 of 3 seeds (+0.781, sign test p=0.25)``,
        ``x0.41 [0.3, 0.56] n=5``, ``+0.1 [0.02, 0.18] n=5`` (a t interval holding 0 says it is a tie)."""
        d = self.diff.mean
        if self.test == NO_TEST:
            return f"{d:+.3g} (n={self.n}: no interval)"
        flips = f", {self.test} p{_p(self.p)}" if self.test in (SIGN_FLIP, SIGN_FLIP_LOG) else ""
        if self.test in _RATIOS:
            r = self.ratio
            assert r is not None
            tie = " (a tie: the interval holds 1)" if r.lo <= 1 <= r.hi else ""
            return f"x{r.mean:.3g} [{r.lo:.3g}, {r.hi:.3g}] n={self.n}{flips}{tie}"
        if self.test in _DIFFERENCES:
            tie = " (a tie: the interval holds 0)" if self.diff.lo <= 0 <= self.diff.hi else ""
            return f"{d:+.3g} [{self.diff.lo:.3g}, {self.diff.hi:.3g}] n={self.n}{flips}{tie}"
        if not self.untied:
            return f"the same on each of {self.n} seeds"
        ties = f", {self.tied} tied" if self.tied else ""
        return f"ahead on {self.ahead} of {self.n} seeds{ties} ({d:+.3g}, sign test p{_p(self.p)})"


def pair_test(
    metric: str,
    a: Sequence[float | None],
    b: Sequence[float | None],
    maximize: bool = True,
    level: float = LEVEL,
    alpha: float = ALPHA,
) -> PairTest:
    """A against B on seed-aligned values (pairs where either side is not finite are dropped), by the
    procedure the judge uses for ``metric`` (the module docstring); ``maximize``: which way is ahead."""
    if len(a) != len(b):
        raise ValueError(f"paired samples need equal lengths, got {len(a)} and {len(b)}")
    pairs = [
        (float(x), float(y))
        for x, y in zip(a, b)
        if x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
    ]
    xa, xb = [x for x, _ in pairs], [y for _, y in pairs]
    d = [x - y for x, y in pairs]
    n, kind = len(pairs), metric_kind(metric)
    sign = 1.0 if maximize else -1.0
    scale = max((abs(v) for v in xa + xb), default=0.0)
    tie = [abs(v) <= _NOISE * scale for v in d]  # equal up to float rounding
    ahead = sum(1 for v, t in zip(d, tie) if not t and sign * v > 0)
    behind = sum(1 for v, t in zip(d, tie) if not t and sign * v < 0)
    ties = sum(tie)
    plain = Interval(float(np.mean(d)) if n else math.nan, math.nan, math.nan, n, _std(d))
    base = PairTest(
        kind, NO_TEST, "fewer than 2 shared seeds", n, ahead, behind, ties, plain, math.nan, math.nan, alpha=alpha
    )
    if n < 2:
        return base
    logs = kind == LOG and all(v > 0 for v in xa + xb)
    why = ""
    if kind == BOUNDED:
        why = f"{metric} is bounded in [0, 1]: seeds pile up at its ends or jump between levels"
    elif _tied([math.log(x) - math.log(y) for x, y in pairs] if logs else d):
        why = "every seed differs by the same " + ("ratio" if logs else "amount") + ": no spread for a t-test"
    if why:
        m = n - ties
        p = float(_st.binomtest(ahead, m, 0.5).pvalue) if m else math.nan
        share = Interval(ahead / n, *clopper_pearson(ahead, n, level), n, math.nan, level, "rate")
        return replace(base, test=SIGN, why=why, p=p, best_p=smallest_sign_p(m), share=share)
    if logs:
        est = Estimate(tuple(x / y for x, y in pairs), "log")
        iv, p, flips = _judged(est, 1.0, level)
        why = f"{metric} is positive and skewed: ratios, tested on their logs"
        test, best = (SIGN_FLIP_LOG, smallest_sign_p(n - ties)) if flips else (RATIO, 0.0)
        return replace(base, test=test, why=why, p=p, best_p=best, ratio=iv)
    lo_b, hi_b = metric_scale(_PREFIX.sub("", metric))[1]
    width = hi_b - lo_b  # a difference of a bounded metric stays within +-(its range)
    est = Estimate(tuple(d), "linear", (-width, width) if math.isfinite(width) else (-math.inf, math.inf))
    iv, p, flips = _judged(est, 0.0, level)
    if flips:
        why = "values on a lattice (ties): exact sign flips, as the judge tests such a mean"
        return replace(base, test=SIGN_FLIP, why=why, diff=iv, p=p, best_p=smallest_sign_p(n - ties))
    r = paired(xa, xb, level, (lo_b, hi_b))
    return replace(base, test=PAIRED_T, why="a continuous metric", diff=iv, p=p, best_p=0.0, effect_size=r.effect_size)


def _judged(est: Estimate, null: float, level: float) -> tuple[Interval, float, bool]:
    """The interval, two-sided p against ``null`` and whether the mean is tested by exact sign flips, as
    the judge tests a mean (``Estimate.p_value``: Student-t, or exact sign flips on lattice values; p is
    twice the smaller one-sided p, as the judge's ``p_alone``). ``sign_flip``/``tested_interval`` are read
    where ``bench.core.stats`` has them (the interval that agrees with that p), else t."""
    p = min(1.0, 2 * min(est.p_value(null, "above"), est.p_value(null, "below")))
    flips = bool(getattr(est, "sign_flip", False))
    iv = getattr(est, "tested_interval", est.interval)(level) if flips else est.interval(level)
    return iv, p, flips


def _std(x: Sequence[float]) -> float:
    if len(x) < 2:
        return math.nan
    s = float(np.std(x, ddof=1))
    return 0.0 if s <= _NOISE * max(float(np.abs(np.asarray(x)).max()), 1e-300) else s


def sign_test_note(m: int, alpha: float = ALPHA) -> str:
    """Why pairs judged per seed over ``m`` untied seeds say "cannot decide" (empty when m can decide):
    ``a sign test over 3 seeds cannot decide at 5%: 3 of 3 give p=0.25 at best; 6 untied seeds can``."""
    if m < 1 or smallest_sign_p(m) <= alpha:
        return ""
    return (
        f"a sign test over {m} seed{'s' if m > 1 else ''} cannot decide at {100 * alpha:g}%: {m} of {m} give "
        f"p={smallest_sign_p(m):.2g} at best; {seeds_to_decide(alpha)} untied seeds can"
    )
