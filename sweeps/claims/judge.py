"""Judging a claim's rules on a study table (one row per run, ``reports.table`` columns).

Per rule: the runs of its configuration (``where``), one value per seed replicate, a 95% Student-t
interval (``reports.stats.mean_ci``; a difference ``where - minus`` uses ``stats.paired`` over
the shared seeds), and a verdict:

- ``holds``: the whole interval is on the rule's side of every threshold;
- ``fails``: the whole interval is on the wrong side of a threshold;
- ``inconclusive``: the interval contains a threshold, fewer than 2 replicates have a value, or a
  seed diverged and the rule does not say what a diverged seed counts as;
- ``missing``: no run of the configuration (or the metric was not recorded).

A claim holds when every rule holds, fails when any rule fails, and is inconclusive otherwise.
No torch here: judging is pure over the table.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from seqbench.bench.core.artifacts import BASELINE, BEST, FINAL, PARAM
from seqbench.bench.core.stats import Interval, mean_ci, paired
from seqbench.sweeps.claims.schema import Baseline, Claim, Rule, resolve_where

HOLDS, FAILS, INCONCLUSIVE, MISSING, ERROR = "holds", "fails", "inconclusive", "missing", "error"
RUN_STATUSES = ("completed", "diverged")


@dataclass
class RuleResult:
    rule: Rule
    verdict: str
    interval: Interval | None = None
    thresholds: dict[str, float] = field(default_factory=dict)  # below/above after baseline scaling
    n_diverged: int = 0
    why: str = ""
    config: str = ""

    def measured(self) -> str:
        """``mean [lo, hi] n=k`` plus what happened to diverged seeds; the reason when nothing was measured."""
        if self.interval is None or self.interval.n == 0:
            return self.why or "no value"
        div = ""
        if self.n_diverged:
            d = self.rule.diverged
            div = f" ({self.n_diverged} diverged" + (
                ", left out" if d == "exclude" else ", as baseline" if d == "baseline" else
                f", as {d}" if not isinstance(d, str) else "") + ")"
        return self.interval.fmt() + div

    def threshold_text(self) -> str:
        parts = [f"< {self.thresholds['below']:.4g}" if "below" in self.thresholds else "",
                 f"> {self.thresholds['above']:.4g}" if "above" in self.thresholds else ""]
        return " and ".join(p for p in parts if p)


@dataclass
class ClaimResult:
    claim: Claim
    profile: str
    verdict: str
    rules: list[RuleResult]
    wall_s: float = 0.0
    study: str = ""
    error: str = ""
    table: pd.DataFrame | None = None
    figure: Any = None  # a plotly figure, or a "skipped: why" line


def claim_verdict(rules: list[RuleResult]) -> str:
    verdicts = {r.verdict for r in rules}
    if FAILS in verdicts:
        return FAILS
    if verdicts == {HOLDS}:
        return HOLDS
    return INCONCLUSIVE


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
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return math.isclose(float(a), float(b))
    return a == b


def metric_column(table: pd.DataFrame, metric: str) -> str | None:
    for col in (metric if metric.startswith(BEST) else FINAL + metric, metric):
        if col in table.columns:
            return col
    return None


def seed_values(rows: pd.DataFrame, rule: Rule, col: str) -> tuple[dict[Any, float], int, bool]:
    """seed -> value (diverged seeds per ``rule.diverged``); the diverged count; whether one is unresolved."""
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
                b = r.get(base_col, math.nan)
                if b is None or not math.isfinite(b):
                    unresolved = True
                else:
                    out[r["seed"]] = float(b)
            elif not isinstance(d, str):
                out[r["seed"]] = float(d)
            continue
        v = r.get(col, math.nan)
        if v is not None and isinstance(v, (int, float)) and math.isfinite(v):
            out[r["seed"]] = float(v)
    return out, n_div, unresolved


def _threshold(t: float | Baseline | None, rows: pd.DataFrame, metric: str) -> float | None:
    if t is None or not isinstance(t, Baseline):
        return t
    col = BASELINE + metric.removeprefix(BEST)
    vals = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows.columns else pd.Series(dtype=float)
    return t.baseline * float(vals.mean()) if len(vals) else math.nan


def verdict_for(iv: Interval, below: float | None, above: float | None) -> tuple[str, str]:
    if iv.n < 2 or math.isnan(iv.lo):
        return INCONCLUSIVE, f"n={iv.n}: fewer than 2 replicates with a value, no interval"
    checks = []
    if below is not None:
        checks.append(HOLDS if iv.hi < below else FAILS if iv.lo >= below else INCONCLUSIVE)
    if above is not None:
        checks.append(HOLDS if iv.lo > above else FAILS if iv.hi <= above else INCONCLUSIVE)
    if FAILS in checks:
        return FAILS, "the interval lies on the wrong side of the threshold"
    if all(c == HOLDS for c in checks):
        return HOLDS, ""
    return INCONCLUSIVE, "the interval contains the threshold"


def _measured(table: pd.DataFrame, where: dict[str, Any], metric: str) -> tuple[pd.DataFrame, str | None, str]:
    """The runs of one configuration and the column holding ``metric`` (None, with why, when missing)."""
    rows = select(table, where)
    if rows.empty:
        return rows, None, f"no completed run of {_label(where)}"
    col = metric_column(rows, metric)
    if col is None:
        return rows, None, f"{metric} was not recorded by the runs of {_label(where)}"
    return rows, col, ""


def judge_rule(rule: Rule, table: pd.DataFrame, swept: dict[str, list[Any]]) -> RuleResult:
    where = resolve_where(rule.where, swept, rule.name)
    label = _label(where)
    res = RuleResult(rule, MISSING, config=label)
    rows, col, res.why = _measured(table, where, rule.metric)
    if col is None:
        return res
    vals, n_div, unresolved = seed_values(rows, rule, col)
    res.n_diverged = n_div
    below, above = _threshold(rule.below, rows, rule.metric), _threshold(rule.above, rows, rule.metric)
    if rule.minus is not None:
        other = resolve_where(rule.minus, swept, rule.name)
        res.config = f"{label} minus {_label(other)}"
        rows_b, col_b, res.why = _measured(table, other, rule.metric)
        if col_b is None:
            return res
        vals_b, n_div_b, unresolved_b = seed_values(rows_b, rule, col_b)
        res.n_diverged += n_div_b
        unresolved = unresolved or unresolved_b
        seeds = [s for s in vals if s in vals_b]
        res.interval = paired([vals[s] for s in seeds], [vals_b[s] for s in seeds]).diff
    else:
        res.interval = mean_ci(list(vals.values()))
    res.thresholds = {k: v for k, v in (("below", below), ("above", above)) if v is not None}
    if any(isinstance(v, float) and math.isnan(v) for v in res.thresholds.values()):
        res.verdict, res.why = MISSING, f"no memoryless baseline of {rule.metric} recorded"
        return res
    res.verdict, res.why = verdict_for(res.interval, below, above)
    if unresolved and res.verdict != MISSING:
        res.verdict = INCONCLUSIVE
        res.why = (f"{res.n_diverged} seed(s) diverged and the rule does not say what a diverged seed counts as "
                   "(diverged: exclude | baseline | <value>)")
    return res


def judge(claim: Claim, table: pd.DataFrame, swept: dict[str, list[Any]], profile: str
          ) -> tuple[str, list[RuleResult]]:
    """The claim's verdict and each rule's result, for the rules that apply to ``profile``."""
    rules = [judge_rule(r, table, swept) for r in claim.rules(profile)]
    return claim_verdict(rules), rules


def verdict_table(results: list[ClaimResult]) -> pd.DataFrame:
    """One row per rule: claim | source | rule | configuration | paper | measured | needs | verdict (rule),
    and the claim's verdict and wall time on each of its rows (what the CLI, verify.md and the page show)."""
    rows = []
    for res in results:
        src = res.claim.source.cite
        claim_cols = {"claim": res.claim.name, "source": src, "claim verdict": res.verdict,
                      "wall s": round(res.wall_s)}
        if not res.rules:
            rows.append({**claim_cols, "rule": "-", "configuration": "", "paper": "",
                         "measured (mean [95% CI] n)": res.error or "not judged", "needs": "", "verdict": res.verdict})
        for r in res.rules:
            rows.append({**claim_cols, "rule": r.rule.name, "configuration": r.config, "paper": r.rule.paper,
                         "measured (mean [95% CI] n)": f"{r.rule.metric}: {r.measured()}",
                         "needs": r.threshold_text(), "verdict": r.verdict + (f" ({r.why})" if r.why and r.verdict
                                                                              != HOLDS else "")})
    return pd.DataFrame(rows)
