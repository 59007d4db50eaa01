"""Judging a claim's rules on a study table (one row per run, ``sweeps.table`` columns).

Per rule: the runs of its configuration (``where``), one value per seed replicate, an estimate that
fits few seeds (``bench.core.stats.Estimate``):

- per seed (``metric: solved``, ``success:``, and by default a bounded metric, a threshold at a
  multiple of the memoryless baseline, imputed diverged seeds and ``largest:`` grid steps; see
  ``measure.per_seed_why``): each seed passes or not, the share of seeds that pass gets an exact binomial
  (Clopper-Pearson) interval and test; without ``success:`` "holds" means more than half the seeds pass
  (a sign test: 8 of 8 seeds give p = 0.0039, 3 of 3 only 0.125);
- a positive skewed metric (loss, MSE, bpc; ``scale: auto``): geometric mean, Student-t on log values,
  so the interval stays positive;
- otherwise the mean with a Student-t interval clipped to the metric's range (``by_mean:`` keeps a
  per-seed rule here, saying why); a difference ``where - minus`` pairs seeds (``scale: log``: the paired
  ratio), and ``success:`` on it judges each seed's difference; ``versus:`` subtracts a second such difference
  per seed (a difference in differences). Seeds that all measured the same value
  leave a mean untested (inconclusive): zero spread over a few seeds is not zero spread of the metric.

``best_of:`` (e.g. the best of 3 learning rates) picks per seed, before any of the above: each seed's
value is its best run over the free keys (``measure.best_rows`` says why per seed and not on the
seeds' mean: no winner's curse in the interval; the selection's own upward pull is stated, never
hidden); the configuration column names the values picked ("best of optim.lr [...] per seed: 0.003 x2").

Each rule gets one-sided p-values for "holds" (inside its thresholds) and "fails" (wholly outside);
the rules and controls of a claim are one family, Holm-corrected at the look's alpha (the share of
``schema.ALPHA`` that ``stats.look_alphas`` spends at that look): a rule is decided when its adjusted p
is within alpha. The interval shown is at the level that rule was tested at, so it agrees with the verdict.

- ``holds`` / ``fails``: decided; ``inconclusive``: not decided (interval straddles, < 2 seeds, tied
  seeds on a mean, an unresolved diverged seed, an undecided control, or Holm);
- ``invalid``: a control the rule names failed, or a "did not learn" / comparison rule names none;
- ``missing``: no run of the configuration (or the metric was not recorded).

A claim is ``invalid`` when a control (or a rule) is invalid, else ``fails`` when any rule fails,
``holds`` when every rule holds, ``inconclusive`` otherwise. No torch here: judging is pure over the table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from seqbench.bench.core.artifacts import FINAL
from seqbench.bench.core.profiles import Profile
from seqbench.bench.core.stats import Estimate, holm, holm_divisors, metric_scale
from seqbench.sweeps.claims.load import best_goal, resolve_where
from seqbench.sweeps.claims.measure import (
    best_rows,
    config_label,
    largest_values,
    per_seed_why,
    picks_text,
    runs_of,
    seed_values,
    threshold_value,
)
from seqbench.sweeps.claims.negatives import BOUND, expand, is_negative, robustness
from seqbench.sweeps.claims.results import FAILS, HOLDS, INCONCLUSIVE, INVALID, MISSING, RuleResult, claim_verdict
from seqbench.sweeps.claims.schema import ALPHA, Claim, Rule

Swept = Mapping[str, Sequence[Any]]  # swept key -> its values in the profile (``schema.swept_values``)


def _beside(rows: pd.DataFrame, metric: str) -> str:
    """For a measured time exponent: the exponent the FLOP count predicts over the same lengths and the
    fixed-cost share (time at the shortest length / at the longest), means over replicates."""
    if not metric.startswith("time_exponent"):
        return ""
    out = []
    flops = FINAL + metric.replace("time_", "flops_").replace("_upper", "")
    for col, text in ((flops, "FLOP count predicts {:.3g}"), (FINAL + "fixed_share", "fixed-cost share {:.0%}")):
        v = pd.to_numeric(rows[col], errors="coerce").dropna() if col in rows.columns else pd.Series(dtype=float)
        if len(v):
            out.append(text.format(float(v.mean())))
    return ", ".join(out)


def _conditions(th: dict[str, float]) -> list[tuple[float, str]]:
    """What "holds" means as (threshold, side) conditions that must all be true."""
    if "lo" in th:
        return [(th["lo"], "above"), (th["hi"], "below")]
    return [(v, k) for k, v in th.items()]


def judge_rule(rule: Rule, table: pd.DataFrame, swept: Swept, alpha: float = ALPHA, goal: str = "") -> RuleResult:
    """One rule on its own at ``alpha`` (no multiplicity correction: :func:`judge` applies Holm); ``goal``:
    the direction a ``best_of`` picks in when the rule does not say (:func:`schema.best_goal`)."""
    res = measure_rule(rule, table, swept, goal)
    if res.estimate is not None:
        decide(res, alpha)
    return res


def measure_rule(rule: Rule, table: pd.DataFrame, swept: Swept, goal: str = "") -> RuleResult:
    """The rule's seed values, estimate, thresholds and p-values; verdict only when nothing can be judged.
    Each kind of rule has its step: ``best_of`` picks per seed (:func:`_best_of`), ``largest`` measures grid
    steps (:func:`rule_values`), ``minus`` pairs seeds (:func:`_paired`), a per-seed or ``rate`` rule judges
    the share of seeds that pass (:func:`_outcomes`), and every estimate is tested alike (:func:`_test`)."""
    where = resolve_where(rule.where, swept, rule.name, rule.free)
    res = RuleResult(rule, MISSING, config=config_label(where))
    rows, col, res.why = runs_of(table, where, rule.metric)
    if col is None:
        return res
    goal = (rule.best_of.goal or goal) if rule.best_of else ""
    notes = ("", "")  # best_of: the values picked, and the seeds left out
    if rule.best_of:
        rows, notes = _best_of(res, rule, rows, col, goal, swept)
        if rows.empty:
            return res
    measured = _quantities(res, rule, table, rows, col, swept, goal, notes)
    if measured is None:
        return res
    values, th, scale, bounds, unresolved = measured
    if rule.rate or res.per_seed:
        outcomes = _outcomes(rule, values, th, rows, res.ratio)
        if outcomes is None:
            res.why = f"no memoryless baseline of {rule.metric} recorded"
            return res
        values, th, res.cut = outcomes
        scale, bounds = "rate", (0.0, 1.0)
    elif any(math.isinf(v) for v in values):
        res.verdict = INCONCLUSIVE
        res.why = (
            f"{sum(map(math.isinf, values))} seed(s) measured an infinite {rule.metric}: no mean; "
            "judge it per seed (success: {above: ...})"
        )
        return res
    return _test(res, values, th, scale, bounds, unresolved)


def _best_of(
    res: RuleResult, rule: Rule, rows: pd.DataFrame, col: str, goal: str, swept: Swept
) -> tuple[pd.DataFrame, tuple[str, str]]:
    """best_of: each seed's best run over the free keys (``measure.best_rows``), the picks named in the
    configuration and in the measured text; no rows (res says why) when no seed ran every free value."""
    if not goal:
        raise ValueError(f"rule {rule.name!r}: best_of needs a goal (schema.best_goal)")
    rows, res.picked, left_out = best_rows(rows, rule, col, goal, swept)
    res.config += "; " + picks_text(res.picked, rule.free, swept)  # the page and the figure
    picks = picks_text(res.picked, rule.free)  # and the measured text (terminal, verify.md)
    if rows.empty:
        res.why = f"no seed has a run at every {'/'.join(rule.free)} value"
    return rows, (picks, left_out)


def _quantities(
    res: RuleResult,
    rule: Rule,
    table: pd.DataFrame,
    rows: pd.DataFrame,
    col: str,
    swept: Swept,
    goal: str,
    notes: tuple[str, str],
) -> tuple[list[float], dict[str, float], str, tuple[float, float], bool] | None:
    """Each seed's quantity (the metric, a largest: grid step, or a minus: paired difference), the thresholds
    on its scale, the scale and range it is judged on, and whether a diverged seed is unresolved; None (res
    says why) when nothing can be judged."""
    vals, res.n_diverged, unresolved = rule_values(rows, rule, col, swept)
    res.beside = "; ".join(x for x in (*notes, _beside(rows, rule.metric)) if x)
    scale, bounds = (
        metric_scale(rule.metric) if rule.largest is None else ("linear", (0.0, float(len(swept[rule.largest.over]))))
    )  # grid steps
    if rule.scale != "auto":
        scale = rule.scale
    raw = {"below": rule.below, "above": rule.above}
    if rule.between is not None:
        raw = {"lo": rule.between[0], "hi": rule.between[1]}
    th = {k: threshold_value(v, rows, rule.metric) for k, v in raw.items() if v is not None}
    res.per_seed = "success:" if rule.success is not None else "" if rule.rate else per_seed_why(rule)
    if rule.minus is not None:
        paired = _paired(res, rule, table, swept, goal, vals, th, notes)
        if paired is None:
            return None
        values, th, unresolved_b = paired
        scale, bounds, unresolved = "linear", (-math.inf, math.inf), unresolved or unresolved_b
    else:
        values = list(vals.values())
        if scale == "log" and any(v <= 0 for v in values):
            scale = "linear"  # a value of 0 has no log: linear, clipped to the metric's range
    if any(isinstance(v, float) and math.isnan(v) for v in th.values()):
        res.why = f"no memoryless baseline of {rule.metric} recorded"
        return None
    return values, th, scale, bounds, unresolved


def _test(
    res: RuleResult,
    values: list[float],
    th: dict[str, float],
    scale: str,
    bounds: tuple[float, float],
    unresolved: bool,
) -> RuleResult:
    """The estimate of ``values`` and its one-sided p-values against the thresholds ``th``; inconclusive
    (out of the Holm family) when a diverged seed is unresolved or too few seeds have a value."""
    rule = res.rule
    res.thresholds = th
    res.estimate = Estimate(tuple(values), scale, bounds)
    if unresolved or res.estimate.n < (1 if scale == "rate" else 2):
        res.interval = res.estimate.interval()  # shown though not judged (decide() sets the judged ones')
    if unresolved:
        res.verdict = INCONCLUSIVE
        res.why = (
            f"{res.n_diverged} seed(s) diverged and the rule does not say what a diverged seed counts as "
            "(diverged: exclude | baseline | <value>)"
        )
        res.estimate = None  # not judged: out of the Holm family
        return res
    if res.estimate.n < (1 if scale == "rate" else 2):
        res.verdict, res.why = (
            INCONCLUSIVE,
            (
                "no value: an exponent is fitted over >= 4 measured lengths"
                if res.estimate.n == 0 and "exponent" in rule.metric
                else f"n={res.estimate.n}: fewer than 2 replicates with a value, no interval"
            ),
        )
        res.estimate = None
        return res
    opposite = {"below": "above", "above": "below"}
    conds = _conditions(th)
    res.p_holds = max(res.estimate.p_value(t, side) for t, side in conds)  # every condition must hold
    res.p_fails = min(res.estimate.p_value(t, opposite[side]) for t, side in conds)  # one broken suffices
    res.p_alone = res.p_adjusted = min(1.0, 2 * min(res.p_holds, res.p_fails))  # two-sided: each side at alpha/2
    return res


def _paired(
    res: RuleResult,
    rule: Rule,
    table: pd.DataFrame,
    swept: Swept,
    goal: str,
    vals: dict[Any, float],
    th: dict[str, float],
    where_notes: tuple[str, str],
) -> tuple[list[float], dict[str, float], bool] | None:
    """minus: the seed-paired differences where - minus (log ratios where ``rule.ratio``), the thresholds on
    their scale and whether a diverged seed of the minus side is unresolved; None (res says why) when
    the minus side cannot be measured."""
    assert rule.minus is not None  # _quantities pairs minus: rules only
    other = resolve_where(rule.minus, swept, rule.name, rule.free)
    label_a, label_b = res.config, config_label(other)
    rows_b, col_b, res.why = runs_of(table, other, rule.metric)
    if col_b is None:
        return None
    if rule.best_of:  # each side picks its own best, per seed
        picks, left_out = where_notes
        rows_b, picked_b, left_out_b = best_rows(rows_b, rule, col_b, goal, swept)
        label_b += "; " + picks_text(picked_b, rule.free, swept)
        minus_picks = picks_text(picked_b, rule.free).split(": ", 1)[1]
        res.beside = "; ".join(x for x in (f"{picks} minus {minus_picks}", left_out, left_out_b) if x)
    res.config = f"{label_a} minus {label_b}"
    vals_b, n_div_b, unresolved_b = rule_values(rows_b, rule, col_b, swept)
    res.sides = [(label_a, list(vals.values())), (label_b, list(vals_b.values()))]
    res.n_diverged += n_div_b
    seeds = [s for s in vals if s in vals_b]
    res.ratio = rule.ratio  # scale: log, or a log-scale metric's (rules.Rule.ratio): the thresholds are ratios
    if res.ratio:
        if not all(vals[s] > 0 and vals_b[s] > 0 for s in seeds):
            res.verdict = INCONCLUSIVE
            res.why = (
                f"a seed measured {rule.metric} <= 0, which has no ratio where/minus (the rule's thresholds are "
                "ratios); a rule on differences says scale: linear"
            )
            return None
        diffs = [math.log(vals[s]) - math.log(vals_b[s]) for s in seeds]
        if rule.success is None:  # success:'s thresholds are shares of seeds; its cut is logged in _outcomes
            th = {k: math.log(v) for k, v in th.items()}
    else:
        diffs = [vals[s] - vals_b[s] for s in seeds]
    if rule.versus is not None:  # a difference in differences: the second pair's difference per seed
        second = _versus(res, rule, table, swept)
        if second is None:
            return None
        by_seed, unresolved_c = second
        diffs = [d - by_seed[s] for s, d in zip(seeds, diffs) if s in by_seed]
        unresolved_b = unresolved_b or unresolved_c
    if not all(math.isfinite(v) for v in diffs):
        res.verdict, res.why = INCONCLUSIVE, f"a seed measured an infinite {rule.metric}: no paired difference"
        return None
    return diffs, th, unresolved_b


def _versus(res: RuleResult, rule: Rule, table: pd.DataFrame, swept: Swept) -> tuple[dict[Any, float], bool] | None:
    """versus: seed -> versus.where - versus.minus (the second difference of a difference in differences),
    and whether a diverged seed is unresolved; both sides join ``res.sides``. None (res says why) if unmeasured."""
    assert rule.versus is not None  # _paired asks only for a versus: rule
    got, labels, unresolved = [], [], False
    for sel in (rule.versus.where, rule.versus.minus):
        where = resolve_where(sel, swept, rule.name, rule.free)
        rows, col, res.why = runs_of(table, where, rule.metric)
        if col is None:
            return None
        vals, n_div, u = rule_values(rows, rule, col, swept)
        res.n_diverged, unresolved = res.n_diverged + n_div, unresolved or u
        labels.append(config_label(where))
        res.sides.append((labels[-1], list(vals.values())))
        got.append(vals)
    res.config = f"({res.config}) minus ({labels[0]} minus {labels[1]})"
    return {s: got[0][s] - got[1][s] for s in got[0] if s in got[1]}, unresolved


def _outcomes(
    rule: Rule, values: list[float], th: dict[str, float], rows: pd.DataFrame, ratio: bool
) -> tuple[list[float], dict[str, float], dict[str, float]] | None:
    """Per seed 1 (passes) or 0, the thresholds on the share of seeds that pass, and what a seed must pass:
    ``success:``'s cut with the rule's thresholds on the share; by default (:func:`measure.per_seed_why`)
    the rule's own thresholds per seed and "more than half" on the share (a sign test). None when a
    baseline is missing."""
    if rule.metric == "solved":
        return values, th, {}
    if rule.success is None:
        passed = [float(all(v < t if side == "below" else v > t for t, side in _conditions(th))) for v in values]
        return passed, {"above": 0.5}, th
    cut = threshold_value(rule.success.threshold, rows, rule.metric)
    if math.isnan(cut):
        return None
    side = "below" if rule.success.below is not None else "above"
    cut = math.log(cut) if ratio else cut
    return [float(v < cut if side == "below" else v > cut) for v in values], th, {side: cut}


def rule_values(rows: pd.DataFrame, rule: Rule, col: str, swept: Swept) -> tuple[dict[Any, float], int, bool]:
    """Seed -> value of one configuration: the metric, or (largest:) the largest passing value of a swept key."""
    if rule.largest is None:
        return seed_values(rows, rule, col)
    return largest_values(rows, rule, col, swept[rule.largest.over])


def decide(res: RuleResult, alpha: float, divisor: int = 1, adjusted: float | None = None, family: int = 1) -> None:
    """Set the verdict at ``alpha`` (Holm: the adjusted p, the interval at alpha / divisor)."""
    p = res.p_adjusted if adjusted is None else adjusted
    res.p_adjusted = p
    est = res.estimate
    assert est is not None  # only measured rules are decided (judge_rule, judge_all's family)
    res.interval = est.tested_interval(1 - alpha / divisor)  # agrees with the p-value (sign flips on a lattice)
    if p <= alpha:
        res.verdict, res.why = (
            (HOLDS, "") if res.p_holds <= res.p_fails else (FAILS, "the interval lies outside the thresholds")
        )
    elif est.tied:
        res.verdict = INCONCLUSIVE
        res.why = (
            f"every seed measured the same {res.rule.metric}: zero spread over {est.n} seeds is "
            "not zero spread of the metric, and a mean has no test without it; judge it per seed "
            "(success:, an exact test)"
        )
    else:
        res.verdict = INCONCLUSIVE
        res.why = (
            "the interval contains the threshold"
            if res.p_alone > alpha
            else (
                f"decided alone (p={res.p_alone:.2g}) but not after Holm over {family} rules and controls "
                f"(adjusted p={p:.2g} > {alpha:.3g})"
            )
        )


def judge(
    claim: Claim, table: pd.DataFrame, swept: Swept, profile: Profile, alpha: float = ALPHA
) -> tuple[str, list[RuleResult]]:
    """The claim's verdict and each rule's result (controls: :func:`judge_all`)."""
    verdict, rules, _, _ = judge_all(claim, table, swept, profile, alpha)
    return verdict, rules


def judge_all(
    claim: Claim, table: pd.DataFrame, swept: Swept, profile: Profile, alpha: float = ALPHA
) -> tuple[str, list[RuleResult], list[RuleResult], str]:
    """Verdict, rules, controls and (for invalid) why, with Holm over rules + controls at ``alpha``."""
    controls = [measure_rule(c, table, swept, best_goal(claim, profile, c)) for c in claim.controls_for(profile)]
    for c in controls:
        c.control = True
    rules: list[RuleResult] = []
    for original in claim.rules(profile):  # a budget: rule is judged at each budget, one row each
        robust = (robustness(claim, profile, original) or BOUND) if is_negative(original) else ""
        for each in expand([original], {k: list(v) for k, v in swept.items()}):
            rules.append(measure_rule(each, table, swept, best_goal(claim, profile, each)))
            rules[-1].robust = robust
    family = [r for r in controls + rules if r.estimate is not None]
    adj = holm([2 * min(r.p_holds, r.p_fails) for r in family])
    div = holm_divisors([r.p_adjusted for r in family])
    for r, p, d in zip(family, adj, div):
        decide(r, alpha, d, min(1.0, p), len(family))
    by_name = {c.rule.name: c for c in controls}
    for r in rules:
        names = r.rule.control_names
        failed = [n for n in names if n in by_name and by_name[n].verdict == FAILS]
        open_ = [n for n in names if n not in by_name or by_name[n].verdict != HOLDS]
        if failed:
            r.verdict, r.why = INVALID, f"control: {failed[0]} failed"
        elif r.rule.needs_control and not names:
            r.verdict, r.why = (
                INVALID,
                ("no control: a rule that says a model did not learn or is worse names a positive control (control:)"),
            )
        elif open_ and r.verdict in (HOLDS, FAILS):
            r.verdict, r.why = INCONCLUSIVE, f"control {open_[0]} is not shown to hold"
    verdict, why = claim_verdict(rules, controls)
    return verdict, rules, controls, why


def decided(verdict: str, rules: list[RuleResult], controls: list[RuleResult]) -> bool:
    """Nothing more seeds could change: invalid, or every rule and control holds or fails."""
    return verdict == INVALID or all(r.verdict in (HOLDS, FAILS) for r in [*rules, *controls])
