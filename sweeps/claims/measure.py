"""A rule's seed values from a study table (one row per run, ``reports.table`` columns): the runs of
one configuration, one value per seed (diverged seeds as the rule says), the threshold after baseline
scaling, and the scale and range a metric is judged on. Pure pandas: no torch."""
from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd

from seqbench.bench.core.artifacts import BASELINE, BEST, FINAL, PARAM
from seqbench.sweeps.claims.rules import Baseline, Rule

RUN_STATUSES = ("completed", "diverged")
_LOG_WORDS = {"loss", "mse", "bpc", "ppl", "perplexity", "nll", "norm"}  # positive, skewed over seeds
_LINEAR_WORDS = {"exponent", "rate", "diff", "delta"}  # signed quantities (decay_rate, time_exponent)
_UNIT_WORDS = {"acc", "accuracy", "exact", "recall", "solved", "f1", "share"}  # in [0, 1]


def metric_scale(metric: str) -> tuple[str, tuple[float, float]]:
    """(scale, range) a metric's seed values are judged on, from its name: log for positive skewed
    metrics, linear clipped to [0, 1] for shares and accuracies, linear otherwise."""
    words = set(re.split(r"[^a-z0-9]+", metric.lower().split("@")[0]))
    if words & _LINEAR_WORDS:
        return "linear", (0.0, 1.0) if words & _UNIT_WORDS else (-math.inf, math.inf)
    if words & _LOG_WORDS:
        return "log", (0.0, math.inf)
    if words & _UNIT_WORDS:
        return "linear", (0.0, 1.0)
    return "linear", (-math.inf, math.inf)


def _label(where: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in where.items()) or "(one configuration)"


def select(table: pd.DataFrame, where: dict[str, Any]) -> pd.DataFrame:
    """The runs (completed or diverged, each run once) of the configuration ``where``."""
    if table.empty or "status" not in table.columns:
        return table.iloc[0:0]
    rows = table[table["status"].isin(RUN_STATUSES)]
    for k, v in where.items():
        col = PARAM + k
        if col not in rows.columns:
            return rows.iloc[0:0]
        rows = rows[rows[col].map(lambda x: _same(x, v))]
    return rows.drop_duplicates("run_id", keep="last")


def _same(a: Any, b: Any) -> bool:
    if b is None:  # a swept null: the run table holds None or NaN for it
        return a is None or (isinstance(a, float) and math.isnan(a))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b))
    return a == b


def metric_column(table: pd.DataFrame, metric: str) -> str | None:
    for col in (metric if metric.startswith(BEST) else FINAL + metric, metric):
        if col in table.columns:
            return col
    return None


def _number(v: Any) -> float:
    try:
        return float(v)  # numpy bools and ints too (the solved flag)
    except (TypeError, ValueError):
        return math.nan


def seed_values(rows: pd.DataFrame, rule: Rule, col: str) -> tuple[dict[Any, float], int, bool]:
    """seed -> value (diverged seeds per ``rule.diverged``); the diverged count; whether one is unresolved.
    A diverged seed counted as the baseline is an unsolved seed for ``metric: solved``."""
    base_col = BASELINE + rule.metric.removeprefix(BEST)
    out: dict[Any, float] = {}
    n_div, unresolved = 0, False
    for _, r in rows.iterrows():
        if r["status"] == "diverged":
            n_div += 1
            d = rule.diverged
            if d == "inconclusive":
                unresolved = True
            elif d == "baseline":
                b = 0.0 if rule.metric == "solved" else _number(r.get(base_col, math.nan))
                if not math.isfinite(b):
                    unresolved = True
                else:
                    out[r["seed"]] = b
            elif not isinstance(d, str):
                out[r["seed"]] = float(d)
            continue
        v = _number(r.get(col, math.nan))
        if not math.isnan(v):  # inf stays: an exploded gradient norm is a value (success: can judge it)
            out[r["seed"]] = v
    return out, n_div, unresolved


def _threshold(t: float | Baseline | None, rows: pd.DataFrame, metric: str) -> float | None:
    if t is None or not isinstance(t, Baseline):
        return t
    col = BASELINE + metric.removeprefix(BEST)
    vals = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows.columns else pd.Series(dtype=float)
    return t.baseline * float(vals.mean()) if len(vals) else math.nan


def _measured(table: pd.DataFrame, where: dict[str, Any], metric: str) -> tuple[pd.DataFrame, str | None, str]:
    """The runs of one configuration and the column holding ``metric`` (None, with why, when missing)."""
    rows = select(table, where)
    if rows.empty:
        return rows, None, f"no completed run of {_label(where)}"
    col = metric_column(rows, metric)
    if col is None:
        return rows, None, f"{metric} was not recorded by the runs of {_label(where)}"
    return rows, col, ""


def largest_values(rows: pd.DataFrame, rule: Rule, col: str, grid: list[Any]
                   ) -> tuple[dict[Any, float], int, bool]:
    """``largest:`` rules: seed -> the grid step of the largest value of ``rule.largest.over`` at which the
    seed's run passes the threshold (1 = the smallest value in ``grid``, len(grid) = the largest, 0 = none
    passes), over the runs of one configuration. Steps, not the values themselves, so that "one step
    lower" is a difference of -1 on any grid and a tie (0) is decidable against a threshold of -0.5.
    A seed without a run at every value is left out (its largest passing value is not known); the
    diverged count and whether a diverged seed is unresolved, as :func:`seed_values`."""
    lg = rule.largest
    over = PARAM + lg.over
    cut = _threshold(lg.below if lg.below is not None else lg.above, rows, rule.metric)
    if over not in rows.columns or cut is None or math.isnan(cut):
        return {}, 0, False
    passed: dict[Any, dict[float, bool]] = {}
    n_div, unresolved = 0, False
    for value, at in rows.groupby(over):
        vals, d, u = seed_values(at, rule, col)
        n_div, unresolved = n_div + d, unresolved or u
        for seed, v in vals.items():
            passed.setdefault(seed, {})[float(value)] = v < cut if lg.below is not None else v > cut
    steps = {v: i + 1 for i, v in enumerate(sorted(float(x) for x in grid))}
    out = {s: float(max([steps[x] for x, ok in p.items() if ok], default=0))
           for s, p in passed.items() if set(p) == set(steps)}
    return out, n_div, unresolved
