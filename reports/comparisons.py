"""Paired comparisons of configurations that share seeds, and the ranked table of a comparison.

Two trials whose swept settings differ in exactly one key, run on the same seeds, saw the same
data streams (batches come from ``(seed, split, index)``), so their per-seed results pair up and
a paired test (``bench.core.stats.paired``) removes the seed-to-seed spread a two-sample test would
carry. For each swept key and each setting of the other keys, every level is compared with the
best level (all pairs when there are at most ``ALL_PAIRS_UP_TO`` levels), one statement each::

    lstm vs rnn at task.delay=40: +0.73 val/acc, 95% CI [0.61, 0.85], p=0.0004 (Wilcoxon p=0.06), d=4.1, n=5

The difference is always the better level minus the other (by the study's goal), so for a
minimised metric it is negative. Pure functions of the report's run table (``sweeps.table``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from seqbench.bench.core.artifacts import BASELINE, PARAM
from seqbench.bench.core.stats import Paired, mean_ci, metric_bounds, paired
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
    result: Paired

    def sentence(self) -> str:
        what = f"{self.a} vs {self.b}" if self.key in NAME_KEYS else f"{self.key}={self.a} vs {self.b}"
        at = " at " + ", ".join(f"{k}={v}" for k, v in self.context) if self.context else ""
        d, n = self.result.diff, self.result.n
        head = f"{what}{at}: {d.mean:+.3g} {self.metric}"
        if n < 2:
            return f"{head} (n={n} shared seed: no interval, no test)"
        if not d.std > 0:
            return f"{head} on each of n={n} shared seeds (no spread: no interval, no test)"
        return (
            f"{head}, 95% CI [{d.lo:.3g}, {d.hi:.3g}], p{_p(self.result.p_t)} "
            f"(Wilcoxon p{_p(self.result.p_wilcoxon)}), d={self.result.effect_size:.2g}, n={n}"
        )


def _p(p: float) -> str:
    """``=0.031``, ``<0.001`` or ``=n/a``: the text after ``p``."""
    if p != p:
        return "=n/a"
    return "<0.001" if p < 0.001 else f"={p:.2g}"


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
                by_level, key=lambda lv: (-sign * mean_ci(list(by_level[lv].values())).mean, order.get(lv, 0))
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
                res = paired(
                    [by_level[a][s] for s in shared], [by_level[b][s] for s in shared], bounds=metric_bounds(obj.column)
                )
                out.append(Comparison(label(key), a, b, ctx, obj.name, res))
    return out


def order_key(v: Any) -> tuple[int, Any]:
    """Numbers in numeric order before text in text order (mixed levels stay sortable)."""
    try:
        return (0, float(v))
    except (TypeError, ValueError):
        return (1, str(v))


def comparisons_table(comps: list[Comparison]) -> pd.DataFrame:
    """One row per comparison: the sentence and its numbers (difference = better level - other)."""
    rows = [
        {
            "statement": c.sentence(),
            "difference": c.result.diff.mean,
            "ci low": c.result.diff.lo,
            "ci high": c.result.diff.hi,
            "p (paired t)": c.result.p_t,
            "p (Wilcoxon)": c.result.p_wilcoxon,
            "d_z": c.result.effect_size,
            "n": c.result.n,
        }
        for c in comps
    ]
    return pd.DataFrame(
        rows, columns=["statement", "difference", "ci low", "ci high", "p (paired t)", "p (Wilcoxon)", "d_z", "n"]
    )


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
    """Trials best first by seed-mean: rank, swept settings, mean [95% CI] n, std, diverged runs and,
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
            "mean [95% CI]": [fmt_ci(m, lo, hi, n) for m, lo, hi, n in zip(t["mean"], t["lo"], t["hi"], t["n"])],
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
