"""Negatives that survive a bigger budget (issue 38 item 5): "X stays at the baseline", "X stays below 0.9".

A negative judged at one short budget says only that X had not learned yet. Beside a positive control on
another model it says that the other model learns faster, not that X cannot. So a negative rule is judged
one of two ways, and the verdict line says which:

- **at two budgets**: ``budget: train.max_steps`` on the rule (the key swept, its largest value at least
  4x its smallest; where: leaves it out): the judge judges the rule at every value of the key, one row each
  (``expand``), and the claim holds only where the negative holds at all of them; or a sibling rule with the
  same configuration at 4x the budget (``parity_extrapolation``'s "with 4x the budget ...");
- **beside a within-model positive control**: a control or a positive rule of the claim (the claim holds
  only if it holds) that runs the same model (every ``model.*`` key the same) and learns at an easier
  setting (another configuration, e.g. with warmup, or an easier metric of the same runs, e.g. the training
  length): the model can learn within this budget, where it is not asked the hard thing.

A rule is negative when it says the model did not learn: above or inside a band of the memoryless baseline,
``below`` on a metric that is maximised (accuracy, exact match, solved) or ``above`` on one minimised (loss,
MSE, bits per character), or a share of seeds on the failing side; comparisons (``minus:``), grid steps
(``largest:``) and metrics of no known direction are not. verify refuses a new registration with a negative
that is neither (``check``); a registration made before this check is judged as registered, its verdict
line marked "budget-bound".
"""

from __future__ import annotations

from typing import Any

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile
from seqbench.bench.core.stats import metric_scale
from seqbench.sweeps.claims.load import resolve_where
from seqbench.sweeps.claims.rules import Baseline, Rule
from seqbench.sweeps.claims.schema import Claim, swept_values

BUDGET_FACTOR = 4  # the larger budget is at least this many times the claim's (issue 38: "the claim's and 4x")


def goal_of(metric: str) -> str:
    """``maximize`` for shares and accuracies, ``minimize`` for positive skewed metrics (loss, MSE, bpc),
    ``""`` where the name says neither (a score, an exponent)."""
    name = metric.removeprefix("best.")
    if name == "solved":
        return "maximize"
    scale, bounds = metric_scale(name)
    if scale == "log":
        return "minimize"
    return "maximize" if bounds == (0.0, 1.0) else ""


def is_negative(rule: Rule) -> bool:
    """The rule says a model did not learn (module docstring)."""
    if rule.minus is not None or rule.largest is not None:
        return False
    if isinstance(rule.above, Baseline) or any(isinstance(b, Baseline) for b in rule.between or []):
        return True
    goal = goal_of(rule.metric)
    if not goal:
        return False
    if rule.success is not None:  # a share of seeds: on the failing side when the seed's cut and the share disagree
        good_cut = (rule.success.above is not None) == (goal == "maximize")
        return good_cut != (rule.above is not None)
    return (goal == "maximize" and rule.below is not None) or (goal == "minimize" and rule.above is not None)


def _model(where: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in where.items() if k.startswith("model.")}


def robustness(claim: Claim, profile: Profile, rule: Rule) -> str:
    """How a negative rule survives a bigger budget, in words for the verdict line; "" when it does not
    (budget-bound). Not for positive rules (""), which :func:`is_negative` tells apart."""
    if rule.budget:
        return f"a negative judged at every {rule.budget} (4x apart or more)"
    swept = swept_values(claim, profile)
    where = resolve_where(rule.where, swept, rule.name, rule.free)
    for other in claim.rules(profile):
        if other is rule or not is_negative(other) or other.metric != rule.metric:
            continue
        o = resolve_where(other.where, swept, other.name, other.free)
        diff = [k for k in set(o) | set(where) if o.get(k) != where.get(k)]
        if len(diff) == 1 and _budget_like(diff[0]):
            a, b = where[diff[0]], o[diff[0]]
            if isinstance(a, (int, float)) and isinstance(b, (int, float)) and max(a, b) >= BUDGET_FACTOR * min(a, b):
                return f"a negative also judged at {diff[0]}={max(a, b)} ({other.name!r})"
    for c in [*claim.controls_for(profile), *claim.rules(profile)]:  # the claim holds only if each of them holds
        if c is rule or is_negative(c) or c.minus is not None or c.largest is not None or c.budget:
            continue
        cw = resolve_where(c.where, swept, c.name, c.free)
        if _model(cw) == _model(where) and (cw != where or c.metric != rule.metric):
            kind = "control" if c in claim.controls_for(profile) else "rule"
            return f"a negative beside a positive {kind} of the same model at an easier setting ({c.name!r})"
    return ""


def _budget_like(key: str) -> bool:
    return key in ("train.max_steps", "train.max_epochs") or key.endswith(".max_steps")


BOUND = "budget-bound: a negative at one budget, beside no control of the same model"


def check(claim: Claim, profile: Profile, registered: bool) -> None:
    """Refuse a new registration whose negative rules are bound by their budget (module docstring); a
    registration made before this check is judged as it was registered (its verdict line says so)."""
    if registered or claim.kind != "sweep":
        return
    bound = [r for r in claim.rules(profile) if is_negative(r) and not robustness(claim, profile, r)]
    if bound:
        r = bound[0]
        raise UserError(
            f"claim {claim.name} (profile {profile}): rule {r.name!r} says the model did not learn, judged at one "
            f"budget beside no control of the same model: a bigger budget could change it; judge it at two budgets "
            f"(budget: train.max_steps on the rule, train.max_steps swept to {BUDGET_FACTOR}x) or name a control in "
            "which the same model learns an easier setting"
        )


def expand(rules: list[Rule], swept: dict[str, list[Any]]) -> list[Rule]:
    """``rules`` with each ``budget:`` rule replaced by one rule per value of its budget key (named
    ``<name> [<key>=<value>]``, that value in where:); the others as they are."""
    out: list[Rule] = []
    for r in rules:
        if not r.budget:
            out.append(r)
            continue
        for v in swept[r.budget]:
            out.append(
                r.model_copy(
                    update={"name": f"{r.name} [{r.budget}={v}]", "where": {**r.where, r.budget: v}, "budget": ""}
                )
            )
    return out
