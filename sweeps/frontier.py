"""Where a model stops on a probe's ladder: per seed, per rung, and the frontier with its interval.

From one probe's study table (one row per run, ``sweeps.table`` columns; the grid is ladder rung x
learning rate (x weight decay), every point on the same seeds):

- a seed **solves** a rung when its best run there (over the rates) meets the task's own ``solved``
  criterion (``results.json``'s ``solved``; a diverged or missing run solves nothing);
- a seed's **frontier** is the hardest rung it solves with every easier rung solved too (-1: it fails
  the first rung), so one lucky rung above a failure does not move it (such seeds are listed as gaps);
- the probe's **frontier** is the median of the seeds' frontiers with a distribution-free interval from
  two order statistics (``stats.median_interval``, exact binomial coverage: 75% at 3 seeds, 94% at 5);
- each rung also gets the share of seeds solving it with its exact Clopper-Pearson interval and the
  primary metric's mean with its t interval (each seed at its best rate).

Pure pandas over the table: no torch, no Optuna.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from seqbench.bench.core.artifacts import BASELINE, FINAL, PARAM
from seqbench.bench.core.card_format import CardEntry, CardRung
from seqbench.bench.core.stats import LEVEL, Estimate, median_interval
from seqbench.sweeps.claims.measure import RUN_STATUSES, metric_scale
from seqbench.sweeps.probes import Probe

BELOW = -1  # the frontier index of a seed (or model) that solves no rung


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(float(a), float(b))
    return a == b


def rung_rows(table: pd.DataFrame, probe: Probe, rung: Any) -> pd.DataFrame:
    """The finished runs (completed or diverged) of one rung, each run once."""
    col = PARAM + "task." + probe.ladder.key
    if table.empty or col not in table.columns or "status" not in table.columns:
        return table.iloc[0:0]
    rows = table[table["status"].isin(RUN_STATUSES) & table[col].map(lambda v: _same(v, rung))]
    return rows.drop_duplicates("run_id", keep="last")


def seed_outcomes(rows: pd.DataFrame, metric: str, maximize: bool, per_seed: int) -> dict[int, tuple[bool, float]]:
    """seed -> (solved by its best run, the metric of its best run) for the seeds with all ``per_seed``
    runs of the rung finished (a seed still missing one is left out: its best is not known yet)."""
    out = {}
    col = FINAL + metric
    for seed, g in rows.groupby("seed"):
        if len(g) < per_seed:
            continue
        values = pd.to_numeric(g[col], errors="coerce") if col in g.columns else pd.Series(dtype=float)
        values = values[(g["status"] == "completed").to_numpy()].dropna()
        best = (values.max() if maximize else values.min()) if len(values) else math.nan
        solved = bool(((g["status"] == "completed") & g["solved"].fillna(False).astype(bool)).any())
        out[int(seed)] = (solved, float(best))
    return out


def seed_frontiers(solved: list[dict[int, bool]], seeds: list[int]) -> tuple[dict[int, int], list[str]]:
    """Per seed, the last rung index of its unbroken run of solved rungs from the first (BELOW if none);
    and the seeds that solved a rung above that frontier."""
    fronts, gaps = {}, []
    for s in seeds:
        f = BELOW
        while f + 1 < len(solved) and solved[f + 1].get(s, False):
            f += 1
        fronts[s] = f
        above = [i for i in range(f + 2, len(solved)) if solved[i].get(s, False)]
        if above:
            gaps.append(f"seed {s} solved rung {above[0] + 1} above its frontier")
    return fronts, gaps


def rung_summary(
    rung: Any, outcomes: dict[int, tuple[bool, float]], metric: str, baseline: float, level: float
) -> CardRung:
    shares = Estimate(tuple(float(ok) for ok, _ in outcomes.values()), "rate").interval(level)
    _, bounds = metric_scale(metric)
    values = tuple(v for _, v in outcomes.values() if math.isfinite(v))
    iv = Estimate(values, "linear", bounds).interval(level)
    return CardRung(
        rung=rung,
        n=len(outcomes),
        solved=sum(ok for ok, _ in outcomes.values()),
        share_lo=shares.lo,
        share_hi=shares.hi,
        mean=iv.mean,
        lo=iv.lo,
        hi=iv.hi,
        baseline=baseline,
    )


def _median(rows: pd.DataFrame, col: str) -> float:
    v = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows.columns else pd.Series(dtype=float)
    return float(v.median()) if len(v) else math.nan


def cost(table: pd.DataFrame, ref_rows: pd.DataFrame) -> CardEntry:
    """Median step time (ms) over the probe's completed runs; parameters and FLOPs per token at the
    reference rung (they grow with a rung's vocabulary or length)."""
    done = table[table["status"] == "completed"] if "status" in table.columns else table
    out: CardEntry = {}  # only the cost fields
    if {"train_time_s", "steps"} <= set(done.columns) and len(done):
        steps = pd.to_numeric(done["steps"], errors="coerce")
        ms = (1000 * pd.to_numeric(done["train_time_s"], errors="coerce") / steps.where(steps > 0)).dropna()
        if len(ms):
            out["step_ms"] = float(ms.median())
    if math.isfinite(n_params := _median(ref_rows, "n_params")):
        out["n_params"] = int(n_params)
    if math.isfinite(flops := _median(ref_rows, "model_flops_per_token")):
        out["flops_per_token"] = flops
    return out


def failures(table: pd.DataFrame, probe: Probe) -> list[str]:
    """The failed trials of the probe's study that no retry superseded, one line each: the rung and why
    (a diverged seed is a result, counted as not solving; these are the trials that did not finish)."""
    need = {"state", "fail_reason", "trial"}
    if table.empty or not need <= set(table.columns):
        return []
    failed = table[table["state"] == "FAIL"]
    if "superseded" in failed.columns:
        failed = failed[~failed["superseded"].fillna(False).astype(bool)]
    col = PARAM + "task." + probe.ladder.key
    out = []
    for _, g in failed.groupby("trial", sort=True):
        row = g.iloc[0]
        rung = row[col] if col in g.columns else "?"
        reason = " ".join(str(row["fail_reason"] or "unknown").split())[:160]
        out.append(f"{probe.ladder.key} {rung}: {reason}")
    return list(dict.fromkeys(out))


def probe_entry(
    table: pd.DataFrame,
    probe: Probe,
    *,
    model: str,
    study: str,
    seeds: list[int],
    per_seed: int,
    metric: str,
    maximize: bool,
    level: float = LEVEL,
) -> CardEntry:
    """The card entry of one probe for one model from its study table; ``per_seed``: runs per seed and
    rung (learning rates x weight decays)."""
    rungs, solved = [], []
    for rung in probe.ladder.rungs:
        rows = rung_rows(table, probe, rung)
        outcomes = seed_outcomes(rows, metric, maximize, per_seed)
        solved.append({s: ok for s, (ok, _) in outcomes.items()})
        rungs.append(rung_summary(rung, outcomes, metric, _median(rows, BASELINE + metric), level))
    fronts, gaps = seed_frontiers(solved, seeds)
    mi = median_interval(list(fronts.values()), level)
    ref = rung_rows(table, probe, probe.ladder.reference)
    return CardEntry(
        model=model,
        probe=probe.name,
        study=study,
        complete=all(r["n"] == len(seeds) for r in rungs),
        failed=failures(table, probe),
        seed_frontiers={str(s): f for s, f in fronts.items()},
        frontier=int(mi.median),
        lo=int(mi.lo),
        hi=int(mi.hi),
        coverage=mi.coverage,
        gaps=gaps,
        rungs=rungs,
        metric=metric,
        **cost(table, ref),
    )
