"""Reading claim files: parse a claim, check every profile against what it would run (no training),
and find the shipped claims by name. The claim's model and what a profile runs are in
``sweeps.claims.schema``."""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seqbench.bench.config import load_yaml
from seqbench.bench.core.errors import UserError, format_validation_error
from seqbench.bench.core.profiles import Profile
from seqbench.bench.core.schema import Section
from seqbench.sweeps import shipped_claims
from seqbench.sweeps.claims.measure import default_per_seed
from seqbench.sweeps.claims.rules import PROFILES, Published, Rule, Scalar
from seqbench.sweeps.claims.schema import CLAIM_KEYS, Claim, Reproduction, cost_config, sweep_spec
from seqbench.sweeps.spec import SweepSpec


def _fields(loc: tuple) -> list[str] | None:
    classes: dict[tuple, type[Section]] = {(): Claim, ("source",): Reproduction}
    if len(loc) == 2 and loc[0] in ("expect", "controls"):
        return list(Rule.model_fields)
    if len(loc) == 3 and loc[:2] == ("source", "published"):
        return list(Published.model_fields)
    if len(loc) == 3 and loc[:2] == ("source", "params"):
        return ["where", "paper", "seqbench", "from"]
    cls = classes.get(tuple(loc))
    return [f for f in cls.model_fields if f not in ("name", "path", "spec")] if cls else None


def parse_claim(raw: Mapping[str, Any], name: str, path: str = "") -> Claim:
    """Validate a claim and every profile; UserError naming the file, the profile and the field."""
    pre = f"{path or name}: "
    spec = {k: v for k, v in raw.items() if k not in CLAIM_KEYS and k != "question"}
    claim_part = {k: v for k, v in raw.items() if k in CLAIM_KEYS or k == "question"}
    if claim_part.get("kind") == "cost":
        extra = sorted(k for k in spec if k not in ("seeds",))
        if extra:
            raise UserError(f"{pre}{extra[0]}: a cost claim has no sweep; put its settings under cost:")
        spec = dict(raw.get("cost") or {})
        claim_part.pop("cost", None)
    elif "cost" in claim_part:
        raise UserError(f"{pre}cost: only for kind: cost")
    try:
        claim = Claim.model_validate({**claim_part, "name": name, "path": path, "spec": spec})
    except ValidationError as e:
        raise UserError(pre + format_validation_error(e, tagged=frozenset(), allowed_fields=_fields)) from None
    for profile in PROFILES:
        if not claim.rules(profile):
            raise UserError(f"{pre}expect: no rule applies to profile {profile}")
        try:
            check_profile(claim, profile, raw.get("question", ""))
        except UserError as e:
            raise e.prefixed(f"{pre}profile {profile}: ") from None
    return claim


def check_profile(claim: Claim, profile: Profile, question: str = "") -> None:
    """Build what ``profile`` would run (no training) and check every rule against it."""
    resolved = claim.resolved(profile)
    spec: SweepSpec | None = None
    if claim.kind == "cost":
        claim.replicates_for(profile)
        swept: dict[str, list[Scalar]] = {"model.name": list(cost_config(resolved).models)}
    else:
        spec = sweep_spec(claim, profile, question)
        swept = {k: list(p.values or []) for k, p in spec.parameters.items()}
    for rule in [*claim.rules(profile), *claim.controls_for(profile)]:
        check_largest(rule, swept)
        check_budget(rule, swept)
        if rule.by_mean and not default_per_seed(rule):
            raise UserError(
                f"expect: rule {rule.name!r}: by_mean: {rule.metric} is judged on its mean already "
                "(unbounded, an absolute threshold, nothing imputed); drop by_mean:"
            )
        second = (rule.versus.where, rule.versus.minus) if rule.versus is not None else ()
        for sel in (rule.where, rule.minus, *second):
            if sel is not None:
                fixed = resolve_where(sel, swept, rule.name, rule.free)
                if spec is not None:
                    check_kept(rule, spec, fixed, swept)
        if rule.best_of is not None:
            if claim.kind == "cost":
                raise UserError(f"expect: rule {rule.name!r}: best_of: only for sweep claims")
            for k in rule.free:
                if k not in swept or len(swept[k]) < 2:
                    raise UserError(
                        f"expect: rule {rule.name!r}: best_of: {k} must be swept over 2 or more values "
                        f"(swept: {', '.join(f'{s} {len(v)}' for s, v in swept.items()) or 'nothing'})"
                    )
            best_goal(claim, profile, rule)


def check_kept(rule: Rule, spec: SweepSpec, fixed: Mapping[str, Any], swept: Mapping[str, Sequence[Any]]) -> None:
    """Every grid point a selector of ``rule`` reads (``fixed``, its ``free`` keys at each swept value) is one the
    spec runs: a point ``exclude:`` leaves out would leave the rule without its runs (a ``best_of`` seed short
    of a candidate, a budget without its row), so it is refused here, before any training."""
    if not spec.exclude:
        return
    free = [k for k in rule.free if k in swept]
    for combo in itertools.product(*(swept[k] for k in free)):
        point = {**fixed, **dict(zip(free, combo))}
        if spec.excluded(point):
            at = " ".join(f"{k}={v}" for k, v in point.items())
            raise UserError(
                f"expect: rule {rule.name!r}: reads {at}, which exclude: leaves out; keep that point in the grid "
                "or change the rule"
            )


def check_budget(rule: Rule, swept: Mapping[str, Sequence[Any]]) -> None:
    """A ``budget:`` rule is judged at each value of its key: swept over numbers, the largest >= 4x the smallest."""
    if not rule.budget:
        return
    values = swept.get(rule.budget, [])
    nums = [v for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if len(values) < 2 or len(nums) < len(values) or max(nums) < 4 * min(nums):
        raise UserError(
            f"expect: rule {rule.name!r}: budget: {rule.budget} must be swept over 2 or more numbers, the largest "
            f"at least 4x the smallest (got {values or 'not swept'})"
        )


def best_goal(claim: Claim, profile: Profile, rule: Rule) -> str:
    """The direction in which ``rule.best_of`` picks: its own goal, else the claim metric's when the rule
    judges that metric (``solved``: maximize); UserError when neither says."""
    if rule.best_of is None:
        return ""
    if rule.best_of.goal:
        return rule.best_of.goal
    if rule.metric == "solved":
        return "maximize"
    m = claim.resolved(profile).get("metric")
    m = m[0] if isinstance(m, list) and m else m
    name, goal = (m.get("name"), m.get("goal")) if isinstance(m, dict) else (m, None)
    picked_on = rule.best_of.on or rule.metric
    if goal and picked_on.removeprefix("best.") == name:
        return str(goal)
    raise UserError(
        f"expect: rule {rule.name!r}: best_of: needs goal: maximize | minimize (its metric "
        f"{rule.metric} is not the claim's metric {name or '(none)'} with a stated goal)"
    )


def resolve_where(
    where: Mapping[str, Any], swept: Mapping[str, Sequence[Any]], rule: str, free: Sequence[str] = ()
) -> dict[str, Any]:
    """``where`` with max/min replaced by the swept values; UserError unless it fixes every swept key
    but the ``free`` ones (``Rule.free``: left out of the result; the judge picks or ranges over them)."""
    unknown = [k for k in where if k not in swept]
    if unknown:
        raise UserError(f"expect: rule {rule!r}: {unknown[0]} is not swept; swept: {', '.join(swept) or 'nothing'}")
    swept = {k: v for k, v in swept.items() if k not in free}
    loose = [k for k in swept if k not in where and len(swept[k]) > 1]
    if loose:
        raise UserError(
            f"expect: rule {rule!r}: where: must fix {', '.join(loose)} (swept), "
            "so configurations are never pooled (or best_of: it, judging each seed at its best value)"
        )
    out = {}
    for k, values in swept.items():
        v = where.get(k, values[0])
        if v in ("max", "min"):
            if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
                raise UserError(
                    f"expect: rule {rule!r}: where: {k}: {v} needs numbers, but {k} is swept over {values}; "
                    "name the value instead"
                )
            v = max(values) if v == "max" else min(values)
        elif not any(v == x for x in values):
            raise UserError(f"expect: rule {rule!r}: {k}={v!r} is not among the swept values {values}")
        out[k] = v
    return out


def check_largest(rule: Rule, swept: Mapping[str, Sequence[Any]]) -> None:
    """A ``largest:`` rule ranges over ``largest.over``: it must be swept over at least 2 numbers."""
    if rule.largest is None:
        return
    over = rule.largest.over
    values = swept.get(over, [])
    if len(values) < 2 or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
        raise UserError(
            f"expect: rule {rule.name!r}: largest.over: {over} must be swept over at least 2 numbers "
            f"(got {values or 'not swept'})"
        )


def load_claim(path: Path | str) -> Claim:
    p = Path(path)
    return parse_claim(load_yaml(p), p.stem, str(p))


def claim_files() -> list[Path]:
    """The shipped claims' YAML files (``sweeps.shipped_claims`` lists them with their questions)."""
    return [Path(str(c.resource)) for c in shipped_claims()]


def find_claims(names: list[str]) -> list[Path]:
    """Shipped claims by name (file stem) or any claim file by path; all shipped ones when none named."""
    if not names:
        return claim_files()
    by_name = {p.stem: p for p in claim_files()}
    out = []
    for n in names:
        if n in by_name:
            out.append(by_name[n])
        elif Path(n).is_file():
            out.append(Path(n))
        else:
            raise UserError(f"claim: {n!r} is neither a shipped claim nor a file; shipped: {', '.join(by_name)}")
    return out
