"""A rule's seed values from a study table (one row per run, ``sweeps.table`` columns): the runs of
one configuration, one value per seed (diverged seeds as the rule says), the threshold after baseline
scaling, and the scale and range a metric is judged on. Pure pandas: no torch."""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from seqbench.bench.core.artifacts import BASELINE, BEST, FINAL, PARAM, RUN_STATUSES
from seqbench.bench.core.settings import same_value
from seqbench.bench.core.stats import metric_scale
from seqbench.sweeps.claims.rules import Baseline, Rule, Threshold


def per_seed_why(rule: Rule) -> str:
    """Why ``rule`` is judged per seed although it states no ``success:`` ("" when its mean is judged):
    each seed passes the rule's thresholds or not, and the rule holds when significantly more than half
    of the seeds pass (exact binomial against 1/2, a sign test), fails when significantly fewer do.

    A Student-t test of the mean fits a metric that spreads smoothly over seeds. These do not: a bounded
    metric piles seeds up at 0 or 1 (accuracy 1.0 on every seed is zero spread, not certainty) or jumps
    between a plateau and a solved level; a threshold at a multiple of the memoryless baseline asks
    whether each run left that plateau; a diverged seed imputed as one value is a point mass; grid steps
    tie. There the mean can sit on the wrong side of a threshold that every seed we happened to draw
    passes. Decided by the rule, never by the seeds' values (choosing the test after seeing the data
    would bend its error rate); ``by_mean:`` keeps the mean where the claim says why it fits."""
    return "" if rule.by_mean else default_per_seed(rule)


def default_per_seed(rule: Rule) -> str:
    """:func:`per_seed_why` before ``by_mean:`` (which only a rule judged per seed by default may state)."""
    if rule.rate:
        return ""
    if rule.largest is not None:
        return "grid steps are discrete and tie"
    if metric_scale(rule.metric)[1] == (0.0, 1.0):
        return f"{rule.metric} is bounded in [0, 1]: seeds pile up at its ends or jump between levels"
    if any(isinstance(t, Baseline) for t in rule.stated_thresholds()):
        return "a baseline multiple: each run leaves the memoryless plateau or stays on it"
    if rule.diverged == "baseline" or not isinstance(rule.diverged, str):
        return "diverged seeds are imputed as one value"
    return ""


def config_label(where: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in where.items()) or "(one configuration)"


def select(table: pd.DataFrame, where: Mapping[str, Any]) -> pd.DataFrame:
    """The runs (completed or diverged, each run once) of the configuration ``where``."""
    if table.empty or "status" not in table.columns:
        return table.iloc[0:0]
    rows = table[table["status"].isin(RUN_STATUSES)]
    for k, v in where.items():
        col = PARAM + k
        if col not in rows.columns:
            return rows.iloc[0:0]
        rows = rows[rows[col].map(lambda x, v=v: same_value(x, v))]
    return rows.drop_duplicates("run_id", keep="last")


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


def threshold_value(t: Threshold, rows: pd.DataFrame, metric: str) -> float:
    """``t`` as a number: a baseline multiple times the runs' mean memoryless baseline (NaN where none)."""
    if not isinstance(t, Baseline):
        return t
    col = BASELINE + metric.removeprefix(BEST)
    vals = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows.columns else pd.Series(dtype=float)
    return t.baseline * float(vals.mean()) if len(vals) else math.nan


def runs_of(table: pd.DataFrame, where: Mapping[str, Any], metric: str) -> tuple[pd.DataFrame, str | None, str]:
    """The runs of one configuration and the column holding ``metric`` (None, with why, when missing)."""
    rows = select(table, where)
    if rows.empty:
        return rows, None, f"no completed run of {config_label(where)}"
    col = metric_column(rows, metric)
    if col is None:
        return rows, None, f"{metric} was not recorded by the runs of {config_label(where)}"
    return rows, col, ""


def largest_values(rows: pd.DataFrame, rule: Rule, col: str, grid: Sequence[Any]) -> tuple[dict[Any, float], int, bool]:
    """``largest:`` rules: seed -> the grid step of the largest value of ``rule.largest.over`` at which the
    seed's run passes the threshold (1 = the smallest value in ``grid``, len(grid) = the largest, 0 = none
    passes), over the runs of one configuration. Steps, not the values themselves, so that "one step
    lower" is a difference of -1 on any grid and a tie (0) is decidable against a threshold of -0.5.
    A seed without a run at every value is left out (its largest passing value is not known); the
    diverged count and whether a diverged seed is unresolved, as :func:`seed_values`."""
    lg = rule.largest
    assert lg is not None  # rule_values measures largest: rules only
    over = PARAM + lg.over
    cut = threshold_value(lg.threshold, rows, rule.metric)
    if over not in rows.columns or math.isnan(cut):
        return {}, 0, False
    passed: dict[Any, dict[float, bool]] = {}
    n_div, unresolved = 0, False
    for value, at in rows.groupby(over):
        vals, d, u = seed_values(at, rule, col)
        n_div, unresolved = n_div + d, unresolved or u
        for seed, v in vals.items():
            passed.setdefault(seed, {})[float(value)] = v < cut if lg.below is not None else v > cut
    steps = {v: i + 1 for i, v in enumerate(sorted(float(x) for x in grid))}
    out = {
        s: float(max([steps[x] for x, ok in p.items() if ok], default=0))
        for s, p in passed.items()
        if set(p) == set(steps)
    }
    return out, n_div, unresolved


def best_rows(
    rows: pd.DataFrame, rule: Rule, col: str, goal: str, swept: Mapping[str, Sequence[Any]]
) -> tuple[pd.DataFrame, dict[Any, dict[str, Any]], str]:
    """``best_of``: per seed, the run at the best value of the rule's free keys (``goal``), so each seed is
    one value, as everywhere else; also seed -> the values picked, and a note on seeds left out.

    Why per seed, not one value per configuration picked on the seeds' mean: the paper's quantity is the
    best over learning rates of one training run (Zoology Fig. 2: "the maximum performance for each
    model over four learning rates"), and a seed's best-of-k is a function of that seed's runs only, so
    the seeds stay independent draws of that quantity and the interval over them is valid for it. A
    rate picked on the pooled mean and judged on the same seeds is the winner's curse: the largest of k
    noisy means, with an interval computed as if the rate had been fixed beforehand (too optimistic).
    What remains is the selection itself, stated rather than removed: best-of-k is above any one fixed
    rate, so an ``above`` rule on it is easier and a ``below`` rule harder than at a rate chosen in
    advance (conservative for "the LSTM does not recall"), and the verdict names the values picked.

    A diverged run never wins (its value is no result); a seed whose runs all diverged keeps one, for
    the rule's ``diverged:``. A seed missing a candidate run is left out (its best would be over fewer).
    ``best_of.on`` picks on another metric than the one judged (validation batches, judged on test batches)."""
    keys = rule.free
    if rule.best_of is not None and rule.best_of.on:  # picked on other batches than those judged (BestOf.on)
        on = metric_column(rows, rule.best_of.on)
        if on is None:
            return rows.iloc[:0], {}, f"{rule.best_of.on} (best_of.on) was not recorded"
        col = on
    cands = list(itertools.product(*(swept[k] for k in keys)))
    sign = 1.0 if goal == "maximize" else -1.0
    out, picked, short, lost = [], {}, [], 0
    for seed, g in rows.groupby("seed", sort=False):
        idx = {}
        for i, r in g.iterrows():
            cand = next(
                (j for j, c in enumerate(cands) if all(same_value(r[PARAM + k], v) for k, v in zip(keys, c))), None
            )
            if cand is not None:
                idx[i] = cand
        if len(set(idx.values())) < len(cands):
            short.append(seed)
            continue
        ok = [i for i in idx if g.at[i, "status"] == "completed" and math.isfinite(_number(g.at[i, col]))]
        # ties go to the first candidate in the swept order: sort by candidate, take the first maximum
        order = sorted(ok or list(idx), key=lambda i: idx[i])
        best = max(order, key=lambda i: sign * _number(g.at[i, col])) if ok else order[0]
        out.append(best)
        picked[seed] = dict(zip(keys, cands[idx[best]]))
        lost += sum(g.at[i, "status"] == "diverged" for i in idx if i != best)
    note = "; ".join(
        x
        for x in (
            f"seed(s) {', '.join(map(str, short))} left out: a {'/'.join(keys)} run missing" if short else "",
            f"{lost} diverged run(s) not picked" if lost else "",
        )
        if x
    )
    return rows.loc[out], picked, note  # the winners' rows, dtypes kept


def picks_text(
    picked: Mapping[Any, Mapping[str, Any]], keys: Sequence[str], swept: Mapping[str, Sequence[Any]] | None = None
) -> str:
    """``best of optim.lr [0.001, 0.003, 0.01] per seed: 0.003 x2, 0.01 x1`` (without ``swept``, short for
    the measured text: ``best optim.lr: 0.003 x2, 0.01 x1``)."""
    counts: dict[str, int] = {}
    for p in picked.values():
        v = ", ".join(f"{p[k]:g}" if isinstance(p[k], float) else str(p[k]) for k in keys)
        counts[v] = counts.get(v, 0) + 1
    picks = ", ".join(f"{v} x{n}" for v, n in counts.items()) or "none"
    if swept is None:
        return f"best {'/'.join(keys)}: {picks}"
    return f"best of {' x '.join(f'{k} {swept[k]}' for k in keys)} per seed: {picks}"
