"""Claim files (``sweeps/claims/*.yaml``): a published claim as an executable check.

A claim extends a sweep spec (``sweeps/spec.py``: ``base``, ``method``, ``metric``,
``parameters``, ``per_model``, ``seeds`` ...) with what makes it a check::

    question: Does the GRU solve the adding problem where the tanh RNN stays at the baseline?
    source:                          # where the claim comes from, with its numbers
      cite: Bai et al. 2018 Tab. 1
      paper: Bai, Kolter & Koltun 2018, An Empirical Evaluation of Generic Convolutional ...
      where: Table 1, adding problem T=600
      metric: test MSE of the predicted sum (lower is better); baseline 1/6 predicts 1
      published: [{what: GRU, value: 5.3e-5, unit: MSE}, {what: RNN, value: 0.177, unit: MSE}]
      differs: we report val/mse on freshly generated sequences (theirs: a fixed test set)
    profiles:                        # overrides deep-merged into the spec (lists replace)
      quick: {base: {train: {max_steps: 600}}, parameters: {task.length: {values: [50]}}, seeds: 3}
      paper: {base: {train: {max_steps: 16000, batch_size: 32}}, parameters: {task.length: {values: [600]}}}
    expect:                          # rules over the measured metrics, judged over the seed replicates
      - {name: GRU solves it, where: {model.name: gru}, metric: val/mse, below: 0.01, paper: 5.3e-5 MSE}
      - {name: RNN at the baseline, where: {model.name: rnn}, metric: val/mse, above: {baseline: 0.9}}
      - {name: GRU beats RNN, where: {model.name: gru}, minus: {model.name: rnn}, metric: val/mse, below: 0}
    figure: length                   # which report figure shows the effect (see FIGURES)
    note: what we measured at the quick profile, and what we tried when it did not hold

``kind: cost`` claims measure instead with ``seqbench cost`` (``bench/commands/cost.py``): a ``cost:``
block of its settings plus ``replicates``; their rows are models (``where: {model.name: lstm}``)
and their metrics ``time_exponent`` / ``time_exponent_upper`` (one value per replicate).

A rule's ``where`` must fix every swept parameter of the profile (values may be ``max``/``min``,
resolved per profile), so a rule never pools configurations by accident. Every profile is checked
when the claim loads by building every run config (sweep claims) or the cost settings.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal, Union

from pydantic import Field, ValidationError, model_validator

from seqbench.bench.config import load_yaml
from seqbench.bench.core.errors import UserError, format_validation_error
from seqbench.bench.core.schema import Section

PROFILES = ("quick", "paper")
FIGURES = ("length", "factors", "heatmap", "learning_curves", "through_time", "cost")
CLAIM_KEYS = ("source", "profiles", "expect", "figure", "note", "kind", "cost")
Scalar = Union[bool, int, float, str]
COST_EXTRA = ("replicates",)


class Published(Section):
    what: str = Field(min_length=1, description="the configuration the number is for, e.g. GRU")
    value: float = Field(description="the published number")
    unit: str = Field(min_length=1, description="its unit or metric, e.g. MSE, bits/char, exact match")


class Source(Section):
    cite: str = Field(min_length=1, max_length=40, description="short citation for tables: Bai et al. 2018 Tab. 1")
    paper: str = Field(min_length=1, description="authors, year, title")
    where: str = Field(min_length=1, description="table or figure")
    metric: str = Field(min_length=1, description="the metric the paper's numbers use, defined")
    published: list[Published] = Field(min_length=1, description="the paper's numbers, with units")
    differs: str = Field("", description="where our measurement differs from theirs")


class Baseline(Section):
    baseline: float = Field(description="this multiple of the task's memoryless baseline of the metric")


Threshold = Union[float, Baseline]


class Rule(Section):
    name: str = Field(min_length=1, description="what the rule checks, in words")
    where: dict[str, Scalar] = Field(description="the configuration: every swept key -> value (or max/min)")
    metric: str = Field(min_length=1, description="results.json final key (val/mse), best.<key>, a diagnostics "
                        "metric (diag/decay_rate@first) or a cost metric (time_exponent_upper)")
    minus: dict[str, Scalar] | None = Field(None, description="judge where - minus, paired by seed")
    below: Threshold | None = Field(None, description="the value (or difference) must be below this")
    above: Threshold | None = Field(None, description="the value (or difference) must be above this")
    diverged: Union[Literal["inconclusive", "exclude", "baseline"], float] = Field(
        "inconclusive", description="what a diverged seed counts as: the rule becomes inconclusive, the seed is "
        "left out, it counts as the memoryless baseline (did not train), or as this value")
    paper: str = Field("", description="the paper's number for this quantity, with unit, shown beside ours")
    profiles: list[Literal["quick", "paper"]] = Field(
        default_factory=lambda: list(PROFILES), min_length=1,
        description="profiles the rule applies to (a configuration only the paper profile runs)")

    @model_validator(mode="after")
    def _has_threshold(self) -> "Rule":
        if self.below is None and self.above is None:
            raise ValueError(f"expect: rule {self.name!r} needs below: and/or above:")
        if self.minus is not None and (isinstance(self.below, Baseline) or isinstance(self.above, Baseline)):
            raise ValueError(f"expect: rule {self.name!r}: a difference (minus:) takes numeric thresholds")
        return self


class Claim(Section):
    """A claim file without its sweep part (kept raw in ``spec`` and checked per profile)."""

    name: str
    path: str
    question: str = Field(min_length=1)
    source: Source
    kind: Literal["sweep", "cost"] = "sweep"
    profiles: dict[Literal["quick", "paper"], dict[str, Any]]
    expect: list[Rule] = Field(min_length=1)
    figure: Literal["length", "factors", "heatmap", "learning_curves", "through_time", "cost"]
    note: str = ""
    spec: dict[str, Any] = Field(default_factory=dict, description="the sweep spec (or the cost block)")

    @model_validator(mode="after")
    def _both_profiles(self) -> "Claim":
        missing = [p for p in PROFILES if p not in self.profiles]
        if missing:
            raise ValueError(f"profiles: needs {' and '.join(missing)} (quick: 2 CPU cores, ~5 min; paper: the "
                             "paper's settings)")
        return self

    def rules(self, profile: str) -> list[Rule]:
        return [r for r in self.expect if profile in r.profiles]

    def resolved(self, profile: str) -> dict[str, Any]:
        """The sweep spec (or cost block) of ``profile``: the claim's, with the profile deep-merged."""
        return deep_merge(self.spec, self.profiles[profile])  # type: ignore[index]

    def digest(self, profile: str) -> str:
        """Short hash of the resolved spec: a changed claim is a new study, an unchanged one resumes."""
        return hashlib.sha256(json.dumps(self.resolved(profile), sort_keys=True, default=str).encode()).hexdigest()[:8]


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(base, default=str))
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def _fields(loc: tuple) -> list[str] | None:
    classes: dict[tuple, type] = {(): Claim, ("source",): Source}
    if len(loc) == 2 and loc[0] == "expect":
        return list(Rule.model_fields)
    if len(loc) == 3 and loc[:2] == ("source", "published"):
        return list(Published.model_fields)
    cls = classes.get(tuple(loc))
    return [f for f in cls.model_fields if f not in ("name", "path", "spec")] if cls else None


def parse_claim(raw: dict[str, Any], name: str, path: str = "") -> Claim:
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


def check_profile(claim: Claim, profile: str, question: str = "") -> None:
    """Build what ``profile`` would run (no training) and check every rule against it."""
    resolved = claim.resolved(profile)
    if claim.kind == "cost":
        cost_config(resolved)
        swept = {"model.name": list(cost_config(resolved).models)}
    else:
        spec = sweep_spec(claim, profile, question)
        swept = {k: list(p.values or []) for k, p in spec.parameters.items()}
    for rule in claim.rules(profile):
        for sel in (rule.where, rule.minus):
            if sel is not None:
                resolve_where(sel, swept, rule.name)


def sweep_spec(claim: Claim, profile: str, question: str = ""):
    """The validated SweepSpec of ``profile`` (every run config built: a bad field fails here)."""
    from seqbench.sweeps.spec import parse_spec

    raw = {"question": question or claim.question, **claim.resolved(profile)}
    spec = parse_spec(raw)
    if spec.method != "grid":
        raise UserError("method: claims judge fixed configurations; use method: grid")
    return spec


def cost_config(resolved: dict[str, Any]):
    from seqbench.bench.training.cost import CostConfig

    d = {k: v for k, v in resolved.items() if k not in COST_EXTRA}
    reps = resolved.get("replicates", 3)
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 2:
        raise UserError(f"cost.replicates: at least 2 (the exponents' interval is over replicates), got {reps!r}")
    try:
        return CostConfig.model_validate(d)
    except ValidationError as e:
        raise UserError("cost." + format_validation_error(
            e, tagged=frozenset(), allowed_fields=lambda loc: [*CostConfig.model_fields, *COST_EXTRA])) from None


def resolve_where(where: dict[str, Any], swept: dict[str, list[Any]], rule: str) -> dict[str, Any]:
    """``where`` with max/min replaced by the swept values; UserError unless it fixes every swept key."""
    unknown = [k for k in where if k not in swept]
    if unknown:
        raise UserError(f"expect: rule {rule!r}: {unknown[0]} is not swept; swept: {', '.join(swept) or 'nothing'}")
    loose = [k for k in swept if k not in where and len(swept[k]) > 1]
    if loose:
        raise UserError(f"expect: rule {rule!r}: where: must fix {', '.join(loose)} (swept), "
                        "so configurations are never pooled")
    out = {}
    for k, values in swept.items():
        v = where.get(k, values[0])
        if v in ("max", "min"):
            v = max(values, key=float) if v == "max" else min(values, key=float)
        elif not any(v == x for x in values):
            raise UserError(f"expect: rule {rule!r}: {k}={v!r} is not among the swept values {values}")
        out[k] = v
    return out


def swept_values(claim: Claim, profile: str) -> dict[str, list[Any]]:
    if claim.kind == "cost":
        return {"model.name": list(cost_config(claim.resolved(profile)).models)}
    return {k: list(p.values or []) for k, p in sweep_spec(claim, profile).parameters.items()}


def load_claim(path: Path | str) -> Claim:
    p = Path(path)
    return parse_claim(load_yaml(p), p.stem, str(p))


def shipped_claims() -> list[Path]:
    from seqbench.sweeps import shipped_claims as shipped  # package data through importlib.resources

    return [Path(str(c.resource)) for c in shipped()]


def find_claims(names: list[str]) -> list[Path]:
    """Shipped claims by name (file stem) or any claim file by path; all shipped ones when none named."""
    if not names:
        return shipped_claims()
    by_name = {p.stem: p for p in shipped_claims()}
    out = []
    for n in names:
        if n in by_name:
            out.append(by_name[n])
        elif Path(n).is_file():
            out.append(Path(n))
        else:
            raise UserError(f"claim: {n!r} is neither a shipped claim nor a file; shipped: {', '.join(by_name)}")
    return out
