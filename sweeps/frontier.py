"""Where a model stops on a probe's ladder: per seed, per rung, and the frontier with its interval.

From one probe's study table (one row per run, ``sweeps.table`` columns; the grid is ladder rung x
learning rate (x weight decay), every point on the same seeds; a ladder of evaluation lengths trains once
per rate and reads rung L from ``test@L/<metric>`` against the probe's ``stop_at``):

- a seed **solves** a rung when its best run there (over the rates) meets the task's own ``solved``
  criterion (``results.json``'s ``solved``; a diverged or missing run solves nothing); a seed the
  study's ladder skipped (it failed an easier rung, ``sweeps/ladder.py``) solves nothing there, and
  the rung's share and mean are over the seeds trained on it; a seed not trained at one rate because it
  solved the rung at another (``skip_solved``) solves it, at its best over the rates it trained;
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

from seqbench.bench.core.artifacts import BASELINE, FINAL, PARAM, RUN_STATUSES, SKIPPED, SOLVED_ELSEWHERE
from seqbench.bench.core.card_format import CardEntry, CardRung
from seqbench.bench.core.settings import same_value
from seqbench.bench.core.stats import LEVEL, Estimate, median_interval, metric_scale
from seqbench.sweeps.probes import Probe

BELOW = -1  # the frontier index of a seed (or model) that solves no rung


def rung_rows(table: pd.DataFrame, probe: Probe, rung: Any) -> pd.DataFrame:
    """The finished runs (completed or diverged) of one rung, each run once (a ladder of evaluation
    lengths: every finished run, each tested at every rung)."""
    col = PARAM + probe.ladder.setting
    if table.empty or "status" not in table.columns or (not probe.ladder.evaluated and col not in table.columns):
        return table.iloc[0:0]
    done = table["status"].isin((*RUN_STATUSES, SKIPPED, SOLVED_ELSEWHERE))
    rows = table[done] if probe.ladder.evaluated else table[done & table[col].map(lambda v: same_value(v, rung))]
    ran = rows["run_id"].astype(str) != ""  # a skipped seed has no run: its rows are each kept
    return pd.concat([rows[ran].drop_duplicates("run_id", keep="last"), rows[~ran]])


def rung_metric(probe: Probe, rung: Any, metric: str) -> str:
    """The metric a rung is read on: ``val/acc``, or ``test@<L>/acc`` on a ladder of evaluation lengths."""
    return f"test@{rung}/{metric.split('/', 1)[1]}" if probe.ladder.evaluated else metric


def seed_outcomes(
    rows: pd.DataFrame, metric: str, maximize: bool, per_seed: int, threshold: float | None = None
) -> dict[int, tuple[bool, float]]:
    """seed -> (solved by its best run, the metric of its best run) for the seeds with all ``per_seed``
    runs of the rung finished (a seed still missing one is left out: its best is not known yet). Solved
    is results.json's ``solved``, or, given a ``threshold``, the metric meeting it (a test length's)."""
    out = {}
    col = FINAL + metric
    for seed, g in rows.groupby("seed"):
        if len(g) < per_seed:
            continue
        completed = (g["status"] == "completed").to_numpy()
        values = pd.to_numeric(g[col], errors="coerce") if col in g.columns else pd.Series(math.nan, index=g.index)
        best_values = values[completed].dropna()
        best = (best_values.max() if maximize else best_values.min()) if len(best_values) else math.nan
        if threshold is None:
            solved = bool((completed & g["solved"].fillna(False).astype(bool).to_numpy()).any())
        else:
            meets = values >= threshold if maximize else values <= threshold
            solved = bool((completed & meets.fillna(False).to_numpy()).any())
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


def skipped_seeds(rows: pd.DataFrame) -> set[int]:
    """The seeds of a rung's rows that the ladder did not train (each of their runs skipped)."""
    if rows.empty:
        return set()
    return {int(seed) for seed, g in rows.groupby("seed") if (g["status"] == SKIPPED).all()}


def rung_summary(
    rung: Any, outcomes: dict[int, tuple[bool, float]], metric: str, baseline: float, level: float, skipped: int = 0
) -> CardRung:
    """A rung over the seeds trained on it (``skipped``: seeds not trained, having failed an easier rung)."""
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
        **({"skipped": skipped} if skipped else {}),
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
    col = PARAM + probe.ladder.setting
    out = []
    for _, g in failed.groupby("trial", sort=True):
        row = g.iloc[0]
        reason = " ".join(str(row["fail_reason"] or "unknown").split())[:160]
        if probe.ladder.evaluated:  # one run is every rung
            out.append(f"a run tested at every length: {reason}")
            continue
        rung = row[col] if col in g.columns else "?"
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
    threshold = probe.stop_at if probe.ladder.evaluated else None
    for rung in probe.ladder.rungs:
        rows = rung_rows(table, probe, rung)
        read = rung_metric(probe, rung, metric)
        outcomes = seed_outcomes(rows, read, maximize, per_seed, threshold)
        skipped = skipped_seeds(rows)
        solved.append({s: ok for s, (ok, _) in outcomes.items()})  # a skipped seed: not solved
        trained = {s: o for s, o in outcomes.items() if s not in skipped}
        rungs.append(rung_summary(rung, trained, read, _median(rows, BASELINE + metric), level, len(skipped)))
    fronts, gaps = seed_frontiers(solved, seeds)
    mi = median_interval(list(fronts.values()), level)
    ref = rung_rows(table, probe, probe.ladder.reference)
    return CardEntry(
        model=model,
        probe=probe.name,
        study=study,
        complete=all(r["n"] + r.get("skipped", 0) == len(seeds) for r in rungs),
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
