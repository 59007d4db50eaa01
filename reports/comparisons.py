"""Paired comparisons of configurations that share seeds, and the ranked table of a comparison.

Two trials whose swept settings differ in exactly one key, run on the same seeds, saw the same
data streams (batches come from ``(seed, split, index)``), so their per-seed results pair up and
a paired test removes the seed-to-seed spread a two-sample test would carry. The test is the one
``seqbench verify`` judges that kind of metric with (``bench.core.seed_tests.pair_test``): per seed
for a bounded metric (the share of seeds ahead, its exact interval, an exact sign test), the ratio for
a loss-like one (t on the log ratios), the paired t otherwise. For each swept key and each setting of
the other keys, every level is compared with the best level (all pairs when there are at most
``ALL_PAIRS_UP_TO`` levels), one statement each::

    transformer vs rnn at task.delay=12: transformer ahead on 3 of 3 seeds (share [0.292, 1], +0.781 val/acc),
    sign test p=0.25: n=3 cannot decide at 5%
    lstm vs rnn at task.length=100: x0.41 val/mse (geometric mean of the per-seed ratios), 95% CI [0.3, 0.56],
    paired t on log ratios p=0.0012, n=5

The better level (by the study's goal, on the seeds' mean: ``seed_tests.summarize``) comes first, so a
difference for a minimised metric is negative. Pure functions of the report's run table (``sweeps.table``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from seqbench.bench.core.artifacts import BASELINE, PARAM
from seqbench.bench.core.seed_tests import SIGN, PairTest, pair_test, sign_test_note, summarize
from seqbench.reports.aggregate import fmt_ci, label, levels, per_trial, swept
from seqbench.sweeps.table import Objective

ALL_PAIRS_UP_TO = 3  # levels of a key at which every pair is compared, not only each against the best
NAME_KEYS = ("model.name", "task.name")  # their levels read as names: "lstm vs rnn"
# A mean within this fraction of the memoryless baseline's size reads as "at" the baseline even when
# its interval misses it: 0.26 vs 0.25 (a tanh RNN guessing on copy) is no memory, not a small win.
AT_BASELINE = 0.05


@dataclass(frozen=True)
class Comparison:
    """Level ``a`` (the better one) against level ``b`` of swept ``key``, the other keys at ``context``."""

    key: str
    a: Any
    b: Any
    context: tuple[tuple[str, Any], ...]
    metric: str
    result: PairTest

    @property
    def winner(self) -> str:
        """Level ``a`` as the statement names it: ``transformer``, or ``task.delay=12``."""
        return str(self.a) if self.key in NAME_KEYS else f"{self.key}={self.a}"

    def sentence(self) -> str:
        what = f"{self.a} vs {self.b}" if self.key in NAME_KEYS else f"{self.key}={self.a} vs {self.b}"
        at = " at " + ", ".join(f"{k}={v}" for k, v in self.context) if self.context else ""
        return self.result.sentence(what + at, self.winner, self.metric)


def seed_values(df: pd.DataFrame, obj: Objective, keys: list[str]) -> dict[tuple, dict[Any, float]]:
    """Swept settings (values of ``keys``, in order) -> {seed: objective} over the runs that scored.

    Two trials with the same settings (a sampler repeating itself) merge; a seed seen twice keeps
    its first value.
    """
    if df.empty or obj.column not in df.columns or not keys:
        return {}
    runs = df[df["run_id"].astype(bool)].assign(_value=lambda d: pd.to_numeric(d[obj.column], errors="coerce"))
    runs = runs[np.isfinite(runs["_value"])]
    out: dict[tuple, dict[Any, float]] = {}
    for setting, g in runs.groupby(keys, sort=False):
        setting = setting if isinstance(setting, tuple) else (setting,)
        g = g.drop_duplicates("seed")
        out[setting] = dict(zip(g["seed"], g["_value"].astype(float)))
    return out


def comparisons(df: pd.DataFrame, obj: Objective, all_pairs_up_to: int = ALL_PAIRS_UP_TO) -> list[Comparison]:
    """Every paired comparison the study supports (see the module docstring), in key order."""
    keys = swept(df)
    values = seed_values(df, obj, keys)
    sign = 1.0 if obj.maximize else -1.0
    out: list[Comparison] = []
    for i, key in enumerate(keys):
        others = [k for k in keys if k != key]
        groups: dict[tuple, dict[Any, dict[Any, float]]] = {}
        for setting, per_seed in values.items():
            ctx = tuple((label(k), setting[keys.index(k)]) for k in others)
            groups.setdefault(ctx, {})[setting[i]] = per_seed
        order = {lv: j for j, lv in enumerate(levels(df[key]))}
        for ctx in sorted(groups, key=lambda c: [order_key(v) for _, v in c]):
            by_level = groups[ctx]
            if len(by_level) < 2:
                continue
            ranked = sorted(
                by_level,
                key=lambda lv: (-sign * summarize(obj.name, list(by_level[lv].values())).value, order.get(lv, 0)),
            )
            pairs = (
                itertools.combinations(ranked, 2)
                if len(ranked) <= all_pairs_up_to
                else ((ranked[0], lv) for lv in ranked[1:])
            )
            for a, b in pairs:
                shared = [s for s in by_level[a] if s in by_level[b]]
                if not shared:
                    continue
                res = pair_test(
                    obj.name, [by_level[a][s] for s in shared], [by_level[b][s] for s in shared], obj.maximize
                )
                out.append(Comparison(label(key), a, b, ctx, obj.name, res))
    return out


def order_key(v: Any) -> tuple[int, Any]:
    """Numbers in numeric order before text in text order (mixed levels stay sortable)."""
    try:
        return (0, float(v))
    except (TypeError, ValueError):
        return (1, str(v))


COMPARISON_COLUMNS = [
    "statement",
    "test",
    "measure",
    "estimate",
    "ci low",
    "ci high",
    "p",
    "smallest p at n",
    "difference",
    "ahead",
    "tied",
    "n",
]


def comparisons_table(comps: list[Comparison]) -> pd.DataFrame:
    """One row per comparison: the sentence, its test (``sign test``, ``paired t on log ratios``,
    ``paired t``, ``no test``), what the test estimates (``measure``: the share of seeds ahead, the ratio
    A/B or the difference A-B) with its 95% interval (exact for the share; none when the seeds tied),
    the two-sided p, the smallest p the test could give at this n, the mean difference (better level -
    other), the seeds the better level is ahead on, the tied seeds and n."""
    rows = []
    for c in comps:
        r, est = c.result, c.result.estimate
        rows.append(
            {
                "statement": c.sentence(),
                "test": r.test,
                "measure": r.measure,
                "estimate": est.mean if r.measure else math.nan,
                "ci low": est.lo if r.measure else math.nan,
                "ci high": est.hi if r.measure else math.nan,
                "p": r.p,
                "smallest p at n": r.best_p,
                "difference": r.diff.mean,
                "ahead": r.ahead,
                "tied": r.tied,
                "n": r.n,
            }
        )
    return pd.DataFrame(rows, columns=COMPARISON_COLUMNS)


def undecidable_note(comps: list[Comparison]) -> str:
    """One sentence when sign tests among ``comps`` cannot decide at their n (seeds too few), else ""."""
    short = sorted(
        {c.result.untied for c in comps if c.result.test == SIGN and c.result.untied and not c.result.can_decide}
    )
    if not short:
        return ""
    note = sign_test_note(short[-1])
    return note[0].upper() + note[1:] + "."


def trial_baselines(df: pd.DataFrame, obj: Objective) -> dict[Any, float]:
    """trial -> the memoryless baseline of the objective (``baseline.<metric>`` of its runs), where the
    runs recorded one (the baseline depends on the task's settings, so each trial has its own)."""
    col = BASELINE + obj.name
    if col not in df.columns:
        return {}
    b = pd.to_numeric(df[col], errors="coerce").groupby(df["trial"]).mean().dropna()
    return {k: float(v) for k, v in b.items()}


def versus_baseline(mean: float, lo: float, hi: float, baseline: float, maximize: bool) -> str | None:
    """``"above"`` (better than the memoryless baseline), ``"at"`` or ``"below"`` (worse); None when
    either is unknown. "at": the 95% interval reaches the baseline, or the mean is within
    ``AT_BASELINE`` of it (relative)."""
    if mean != mean or baseline != baseline:
        return None
    sign = 1.0 if maximize else -1.0
    gain = sign * (mean - baseline)
    reaches = lo == lo and hi == hi and lo <= baseline <= hi
    if reaches or abs(gain) <= AT_BASELINE * abs(baseline):
        return "at"
    return "above" if gain > 0 else "below"


def ranked(df: pd.DataFrame, obj: Objective) -> pd.DataFrame:
    """Trials best first by seed-mean: rank, swept settings, ``mean [95% CI]`` as ``seqbench verify`` states a
    configuration (``aggregate.cell_stats``: a geometric mean for a loss-like metric, "1 on all 3 seeds"
    where the seeds tied, never a zero-width interval), the plain std, n, diverged runs and,
    where the runs recorded it, ``baseline``: "at 0.25" or "below 0.25" for a trial no better than the
    memoryless baseline (blank when above it).

    Trials without a scored seed come last with an empty mean (they are listed, not dropped).
    """
    t = per_trial(df, obj)
    if t.empty:
        return pd.DataFrame(columns=["rank", "trial", "state", "mean [95% CI]", "std", "n", "diverged"])
    finite = np.isfinite(t["mean"].astype(float))
    t = pd.concat([t[finite].sort_values("mean", ascending=not obj.maximize), t[~finite]])
    params = [c for c in t.columns if c.startswith(PARAM)]
    out = pd.DataFrame(
        {
            "rank": pd.array([i + 1 if f else None for i, f in enumerate(finite.loc[t.index])], dtype="Int64"),
            "trial": t["trial"].astype(int).values,
            "state": t["state"].values,
            **{label(p): t[p].values for p in params},
            "mean [95% CI]": [
                fmt_ci(m, lo, hi, n, form=f) for m, lo, hi, n, f in zip(t["mean"], t["lo"], t["hi"], t["n"], t["form"])
            ],
            "std": t["std"].values,
            "n": t["n"].astype(int).values,
            "diverged": t["diverged"].astype(int).values,
        }
    )
    base = trial_baselines(df, obj)
    if base:
        marks = []
        for trial, m, lo, hi in zip(t["trial"], t["mean"], t["lo"], t["hi"]):
            b = base.get(trial, math.nan)
            v = versus_baseline(float(m), float(lo), float(hi), b, obj.maximize)
            marks.append(f"{v} {b:.3g}" if v in ("at", "below") else "")
        out["baseline"] = marks
    return out
