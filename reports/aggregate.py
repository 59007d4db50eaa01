"""What a study swept and the statistics of its cells of runs, read from the tidy run table
(``sweeps.table``); the figures (``reports.figures``) and tables of the dashboard draw these.

Which figures a study gets depends on what it swept, found by these heuristics (the only
parameter names the reports know):
- architecture axis: ``model.name`` when swept, else the runs' ``model`` column;
- length axis (long-dependency view): the first swept key of ``LENGTH_KEYS``;
- factorial heatmap: the swept keys with at most ``MAX_LEVELS`` levels, most levels on x,
  next on y, the third (if any) as one panel per level;
- length generalisation: ``final.test@<L>/<metric>`` columns from ``eval.lengths``.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np
import pandas as pd

from seqbench.bench.core.artifacts import FINAL, PARAM
from seqbench.bench.core.seed_tests import fmt_summary, summarize
from seqbench.sweeps.table import Objective, outcomes

LENGTH_KEYS = ("task.delay", "task.length", "task.seq_len", "task.max_len", "task.n_pairs")
ARCH_KEY = "model.name"
MAX_LEVELS = 12
_TEST_AT = re.compile(rf"^{re.escape(FINAL)}test@(\d+)/(.+)$")


# -- what was swept -------------------------------------------------------------------------
def levels(s: pd.Series) -> list[Any]:
    """Distinct non-null values, numeric order when all numeric, else text order."""
    vals = [v for v in pd.unique(s.dropna())]
    try:
        return sorted(vals, key=float)
    except (TypeError, ValueError):
        return sorted(vals, key=str)


def swept(df: pd.DataFrame) -> list[str]:
    """Param columns that take at least two values in the table, in column order."""
    return [c for c in df.columns if c.startswith(PARAM) and len(levels(df[c])) >= 2]


def label(col: str) -> str:
    return col[len(PARAM) :] if col.startswith(PARAM) else col


def arch_column(df: pd.DataFrame) -> str | None:
    if PARAM + ARCH_KEY in swept(df):
        return PARAM + ARCH_KEY
    return "model" if "model" in df.columns and df["model"].notna().any() else None


def length_column(df: pd.DataFrame) -> str | None:
    cols = swept(df)
    for k in LENGTH_KEYS:
        if PARAM + k in cols and pd.api.types.is_numeric_dtype(df[PARAM + k]):
            return PARAM + k
    return None


def heatmap_axes(df: pd.DataFrame) -> tuple[str, str, str | None] | None:
    """(x, y, facet) for the factorial view, or None when fewer than two discrete factors were swept."""
    cols = [c for c in swept(df) if len(levels(df[c])) <= MAX_LEVELS]
    if len(cols) < 2:
        return None
    cols = sorted(cols, key=lambda c: -len(levels(df[c])))
    return cols[0], cols[1], (cols[2] if len(cols) > 2 else None)


def color_column(df: pd.DataFrame) -> str | None:
    """Default colouring for curves: the architecture if swept, else the factor with fewest levels."""
    if PARAM + ARCH_KEY in swept(df):
        return PARAM + ARCH_KEY
    cols = sorted(swept(df), key=lambda c: len(levels(df[c])))
    return cols[0] if cols else None


# -- aggregation ----------------------------------------------------------------------------
def finite_values(s: pd.Series) -> pd.Series:
    s = pd.to_numeric(s, errors="coerce")
    return s[np.isfinite(s)]


def cell_stats(g: pd.DataFrame, col: str) -> dict[str, Any]:
    """A group's runs of ``col`` as ``seqbench verify`` states a configuration
    (``bench.core.seed_tests.summarize``, so every report states the same interval): ``mean`` (the
    geometric mean for a loss-like metric, the share at 1 when an accuracy's seeds all scored 0 or 1),
    its 95% interval ``lo``/``hi`` (NaN below two runs and when every run tied: no zero-width interval),
    the plain ``std`` (ddof=1), n finite runs, diverged runs and ``form`` (how ``fmt_ci`` writes it)."""
    v = finite_values(g[col]) if col in g else pd.Series(dtype=float)
    s = summarize(col, v.tolist())
    return {
        "mean": s.value,
        "std": s.std,
        "lo": s.lo,
        "hi": s.hi,
        "n": s.n,
        "diverged": int(g["diverged"].fillna(False).astype(bool).sum()),
        "form": s.form,
    }


def per_trial(df: pd.DataFrame, obj: Objective) -> pd.DataFrame:
    """One row per trial: state, swept params, mean/std/n/diverged of the objective over its seeds.
    A superseded attempt is left out: its configuration is the retry's row (``sweeps.table.outcomes``)."""
    params = swept(df) or [c for c in df.columns if c.startswith(PARAM)]
    df = outcomes(df)
    rows = []
    for trial, g in df.groupby("trial", sort=True):
        rows.append(
            {
                "trial": trial,
                "state": g["state"].iloc[0],
                **{p: g[p].iloc[0] for p in params},
                **cell_stats(g, obj.column),
            }
        )
    return pd.DataFrame(rows)


def _best(t: pd.DataFrame, obj: Objective) -> pd.Series | None:
    t = t[np.isfinite(t["mean"].astype(float))]
    if t.empty:
        return None
    return t.loc[t["mean"].idxmax() if obj.maximize else t["mean"].idxmin()]


def summary_table(df: pd.DataFrame, obj: Objective) -> pd.DataFrame:
    """Best configuration at every level of the architecture and of every swept factor.

    ``best`` is the trial with the best seed-mean at that level (its mean, 95% interval, std, seed count and
    ``form``: ``fmt_ci``'s); ``all runs`` is the mean over every run at that level (geometric for a
    loss-like metric, as ``cell_stats``); ``diverged`` counts runs at the level.
    """
    trials = per_trial(df, obj)
    factors = [c for c in [arch_column(df)] if c] + [c for c in swept(df) if c != arch_column(df)]
    rows = []
    for f in factors:
        key = f if f in trials.columns else None
        for lv in levels(df[f]):
            runs = df[df[f] == lv]
            best = (
                _best(trials[trials[key] == lv], obj)
                if key
                else _best(trials[trials["trial"].isin(runs["trial"])], obj)
            )
            other = {label(p): best[p] for p in swept(df) if p != f} if best is not None else {}
            allr = cell_stats(runs, obj.column)
            rows.append(
                {
                    "factor": label(f),
                    "level": lv,
                    "best mean": best["mean"] if best is not None else math.nan,
                    "best std": best["std"] if best is not None else math.nan,
                    "best lo": best["lo"] if best is not None else math.nan,
                    "best hi": best["hi"] if best is not None else math.nan,
                    "best form": best["form"] if best is not None else "empty",
                    "seeds": int(best["n"]) if best is not None else 0,
                    "best trial": int(best["trial"]) if best is not None else None,
                    "best config": ", ".join(f"{k}={v}" for k, v in other.items()),
                    "all runs mean": allr["mean"],
                    "runs": int(runs["run_id"].astype(bool).sum()),
                    "diverged": allr["diverged"],
                }
            )
    return pd.DataFrame(rows)


def top_trials(df: pd.DataFrame, obj: Objective, k: int = 10) -> pd.DataFrame:
    t = per_trial(df, obj)
    t = t[np.isfinite(t["mean"].astype(float))].sort_values("mean", ascending=not obj.maximize)
    return t.head(k).rename(columns={**{c: label(c) for c in t.columns}, "n": "seeds scored"})


def fmt_ci(mean: float, lo: float, hi: float, n: int, digits: int = 3, form: str | None = None) -> str:
    """``0.731 [0.702, 0.760] n=5``, ``0.731 (n=1, no interval)``, ``1 on all 3 seeds`` (tied: no interval),
    ``geo-mean 0.12 [0.09, 0.16] n=5`` or ``2/3 seeds at 1 [0.0943, 0.992] n=3`` (``form``, from
    ``cell_stats``; without it, a linear mean, or tied where n >= 2 has no interval): the interval and n
    always together (``bench.core.seed_tests.fmt_summary``)."""
    m = math.nan if mean is None else float(mean)
    form = form if isinstance(form, str) else "linear"
    return fmt_summary(form, m, float(lo), float(hi), int(n) if n == n else 0, digits)


# -- what the runs recorded beyond the objective --------------------------------------------
def test_lengths(df: pd.DataFrame) -> dict[str, list[int]]:
    """metric -> evaluated lengths, from ``final.test@<L>/<metric>`` columns."""
    out: dict[str, list[int]] = {}
    for c in df.columns:
        m = _TEST_AT.match(c)
        if m and df[c].notna().any():
            out.setdefault(m.group(2), []).append(int(m.group(1)))
    return {k: sorted(v) for k, v in out.items()}


def curve_metric(curves: pd.DataFrame, obj: Objective) -> str | None:
    have = set(curves["metric"].unique()) if not curves.empty else set()
    for m in (obj.name, "val/loss", "train/loss"):
        if m in have:
            return m
    return None
