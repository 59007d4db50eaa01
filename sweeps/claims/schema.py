"""Claim files (``sweeps/claims/*.yaml``): a published claim, or your own hypothesis, as an executable check.

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
    looks: [3, 5, 8]                 # optional: verify judges at 3 seeds, adds seeds up to 5, then 8, and stops
                                     # at the first look that decides every rule (alpha 0.05 spent over them,
                                     # most at the last: 0.0014, 0.0118, 0.0368); locked once judged
    controls:                        # rules that must hold for the claim to mean anything (a comparator trains)
      - {name: GRU learns, where: {model.name: gru}, metric: val/mse, below: {baseline: 0.1}}
    expect:                          # rules over the measured metrics, judged over the seed replicates
      - {name: GRU solves it, where: {model.name: gru}, metric: val/mse, below: 0.01, paper: 5.3e-5 MSE}
      - {name: RNN at the baseline, where: {model.name: rnn}, metric: val/mse,
         between: [{baseline: 0.9}, {baseline: 1.1}], control: GRU learns}
      - {name: GRU beats RNN, where: {model.name: gru}, minus: {model.name: rnn}, metric: val/mse, below: 0,
         control: GRU learns}
      - {name: TCN solves it on most seeds, where: {model.name: tcn}, metric: solved, above: 0.5}
      - {name: share of seeds below 0.1 x baseline, where: {model.name: tcn}, metric: val/mse,
         success: {below: {baseline: 0.1}}, above: 0.2}
      - {name: TCN beats GRU on most seeds, where: {model.name: tcn}, minus: {model.name: gru},
         metric: val/mse, success: {below: 0}, above: 0.5, control: GRU learns}     # a sign test
      - {name: attention at its best rate, where: {model.name: transformer}, best_of: optim.lr,
         metric: val/acc, above: 0.9}    # optim.lr swept: each seed at its best of the swept rates
    figure: length                   # which report figure shows the effect (see FIGURES)
    note: what we measured at the quick profile, and what we tried when it did not hold

Rule features (``sweeps/claims/judge.py`` says how each is judged): ``below``/``above`` (a number
or ``{baseline: x}``, x times the task's memoryless baseline), ``between: [lo, hi]`` (a two-sided
band), ``success:`` or ``metric: solved`` (each seed succeeded or not; the thresholds apply to the
share of seeds, exact binomial; on a ``minus:`` rule ``success:`` judges each seed's paired difference),
``largest: {over: optim.lr, below: {baseline: 0.85}}`` (per seed, the grid step of the largest swept
value at which the run passes; where: leaves ``over`` out; "one step lower on most seeds" is ``minus:
..., success: {below: -0.5}, above: 0.5``), ``by_mean: why`` (a bounded metric, a baseline multiple or
imputed diverged seeds are judged per seed, a sign test on the share of seeds past the thresholds,
unless the rule says why its mean fits: ``judge.py``), ``best_of:`` (swept keys the rule leaves free:
each seed is judged at its best value of them, e.g. the best of 3 learning rates; ``{params: [...], goal:
...}``, the goal by default the claim metric's), ``scale:`` (auto | linear | log), ``control:`` (names in
``controls:``, or one inline rule). A rule that says a model did not learn (``above``/``between`` a
baseline multiple) or compares two configurations (``minus:``) names a control (or says why it needs
none: ``no_control: reason``), else it is judged ``invalid``; a control that fails makes the claim
``invalid``. ``looks:`` may be set per profile; ``seeds:`` then defaults to range(last look). A claim is judged under
its registration (``registry.py``): settings, seeds, looks, rules, thresholds and controls, hashed into
``Claim.digest``; changing any of them on seeds a registration judged is refused.

Your own hypothesis (``source.kind: hypothesis``; the default ``kind: reproduction`` is the source above)
cites no paper: ``source: {kind: hypothesis, by: A. Researcher, why: what makes you expect it}`` (``by``
required; ``why`` and ``metric``, the metric defined, optional). It is judged like any claim (registered
beside its file, the same statistics), and its rows say ``own hypothesis, not a reproduction``
(:data:`HYPOTHESIS`) where a reproduction names its paper. A reproduction's fields (``cite``, ``paper``,
``where``, ``published``, ``differs``, ``params``) and a rule's ``paper:`` are refused on a hypothesis, so
no paper is invented or implied; a shipped claim (``sweeps/claims/``) must be a reproduction.

``kind: cost`` claims measure instead with ``seqbench cost`` (``bench/commands/cost.py``): a ``cost:``
block of its settings plus ``replicates`` (or ``looks:``, counted in replicates of the whole measurement:
verify measures up to each look and stops at the first that decides); their rows are models
(``where: {model.name: lstm}``) and their metrics ``time_exponent`` (all lengths), ``time_exponent_upper`` (upper half),
``time_exponent_long`` (the 4 longest), ``flops_exponent``/``flops_exponent_long`` (the FLOP count's
prediction at the same lengths) and ``fixed_share`` (time at the shortest length / at the longest),
one value per replicate; a fit needs at least 4 lengths.

A rule's ``where`` must fix every swept parameter of the profile (values may be ``max``/``min``,
resolved per profile), so a rule never pools configurations by accident. Every profile is checked
when the claim loads by building every run config (sweep claims) or the cost settings.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from seqbench.bench.core.errors import UserError, did_you_mean, format_validation_error
from seqbench.bench.core.profiles import PROFILES, Profile  # re-exported: tests import them from here
from seqbench.bench.core.schema import Section
from seqbench.bench.core.verdicts import HYPOTHESIS
from seqbench.bench.training.cost_config import CostConfig
from seqbench.sweeps.claims.rules import (  # noqa: F401
    Baseline,
    BestOf,
    ParamCount,
    Published,
    Rule,
    Scalar,
    Source,
    Success,
    Threshold,
)
from seqbench.sweeps.grid import GridStudy, NotAGrid, grid_of
from seqbench.sweeps.spec import SweepSpec

FIGURES = ("length", "factors", "heatmap", "learning_curves", "through_time", "cost")
CLAIM_KEYS = ("source", "profiles", "expect", "figure", "note", "kind", "cost", "controls", "looks")
VERIFY_KEYS = ("seeds", "looks", "replicates")  # in the digest as the seeds and looks verify uses, not as written
ALPHA = 0.05  # the stated error of a claim's verdict: 95%, spent over its looks
COST_EXTRA = ("replicates",)
MIN_COST_LENGTHS = 4
SOURCE_KINDS = ("reproduction", "hypothesis")
REPRODUCTION_ONLY = ("cite", "paper", "where", "published", "differs", "params")  # what a hypothesis has none of
SHIPPED = Path(__file__).parent  # the shipped claims' folder (this package): reproductions only


class Reproduction(Source):
    """``source:`` of a claim that reproduces a published result (``kind: reproduction``, the default): the
    paper, where in it, its metric and its published numbers (``rules.Source``)."""

    kind: Literal["reproduction"] = "reproduction"


class Hypothesis(Section):
    """``source: {kind: hypothesis, by: ..., why: ...}``: the claim is its author's own hypothesis, judged like
    any claim but with no paper behind it: no citation and no published numbers (refused when given, so none
    is invented), and every verdict row says :data:`HYPOTHESIS` where a reproduction names its paper. The
    properties read as a reproduction's fields do, so the verdict table and page need no special case."""

    kind: Literal["hypothesis"]
    by: str = Field(min_length=1, description="whose hypothesis: a name or a team")
    why: str = Field("", description="why you expect it: a reason, a pilot, a paper it builds on")
    metric: str = Field("", description="what the rules' metric measures, defined, where its name does not say")

    @model_validator(mode="before")
    @classmethod
    def _no_paper(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        given = [k for k in REPRODUCTION_ONLY if k in data]
        if given:
            raise ValueError(
                f"source: kind: hypothesis has no paper behind it, so no {', '.join(f'{k}:' for k in given)} "
                "(drop it, or drop kind: hypothesis for a reproduction of a published result)"
            )
        allowed = list(cls.model_fields)
        unknown = [str(k) for k in data if k not in allowed]
        if unknown:
            hint = did_you_mean(unknown[0], allowed, lambda s: f"source.{s}")
            raise ValueError(
                f"source.{unknown[0]}: unknown field of a hypothesis; allowed: {', '.join(allowed)}"
                + (f";{hint}" if hint else "")
            )
        return data

    @property
    def cite(self) -> str:
        """The source column of the claim's verdict rows."""
        return HYPOTHESIS

    @property
    def paper(self) -> str:
        return f"{self.by}'s own hypothesis, not a reproduction of a published result"

    @property
    def where(self) -> str:
        return self.why or "no published result to compare with"

    @property
    def published(self) -> list[Published]:
        return []

    @property
    def differs(self) -> str:
        return "no published result to differ from"

    @property
    def params(self) -> list[ParamCount]:
        return []


class Claim(Section):
    """A claim file without its sweep part (kept raw in ``spec`` and checked per profile)."""

    name: str
    path: str
    question: str = Field(min_length=1)
    source: Reproduction | Hypothesis = Field(
        description="a reproduction (the default: a paper and its published numbers) or your own hypothesis"
    )
    kind: Literal["sweep", "cost"] = "sweep"
    profiles: dict[Profile, dict[str, Any]]
    expect: list[Rule] = Field(min_length=1)
    controls: list[Rule] = Field(
        default_factory=list,
        description="rules that must hold for the claim to mean "
        "anything (a comparator trains); one that fails makes the claim invalid",
    )
    looks: list[int] | None = Field(
        None,
        min_length=1,
        description="seed counts at which verify judges, "
        "stopping at the first that decides every rule (alpha spent over them)",
    )
    figure: Literal["length", "factors", "heatmap", "learning_curves", "through_time", "cost"]
    note: str = ""
    spec: dict[str, Any] = Field(default_factory=dict, description="the sweep spec (or the cost block)")

    @field_validator("source", mode="before")
    @classmethod
    def _source_kind(cls, v: Any) -> Any:
        """``source.kind`` picks the source's fields (validated here, so an error names ``source.<field>``)."""
        if isinstance(v, (Reproduction, Hypothesis)):
            return v
        if not isinstance(v, Mapping):
            raise ValueError(
                f"source: a mapping, {{cite: ..., paper: ..., published: [...]}} for a reproduction or {{kind: "
                f"hypothesis, by: ...}} for your own hypothesis (got {v!r})"
            )
        kind = v.get("kind", "reproduction")
        if kind not in SOURCE_KINDS:
            hint = did_you_mean(kind, SOURCE_KINDS)
            raise ValueError(
                f"source.kind: reproduction (the default: a published result) or hypothesis (your own), got {kind!r}"
                + (f";{hint}" if hint else "")
            )
        return (Hypothesis if kind == "hypothesis" else Reproduction).model_validate(v)

    @property
    def hypothesis(self) -> bool:
        """Whether the claim is its author's own hypothesis (``source.kind: hypothesis``), not a reproduction."""
        return isinstance(self.source, Hypothesis)

    @model_validator(mode="after")
    def _both_profiles(self) -> Claim:
        missing = [p for p in PROFILES if p not in self.profiles]
        if missing:
            raise ValueError(
                f"profiles: needs {' and '.join(missing)} (quick: 2 CPU cores, ~5 min; paper: the paper's settings)"
            )
        for r in self.expect:  # an inline control joins the claim's controls under its name
            if isinstance(r.control, dict):
                inline = Rule.model_validate(r.control)
                if inline.name not in {c.name for c in self.controls}:
                    self.controls.append(inline)
        names = [c.name for c in self.controls]
        if len(set(names)) != len(names):
            raise ValueError(f"controls: names must be unique (got {names})")
        for r in self.expect:
            unknown = [c for c in r.control_names if c not in names]
            if unknown:
                raise ValueError(
                    f"expect: rule {r.name!r}: control {unknown[0]!r} is not in controls: "
                    f"({', '.join(names) or 'none'})"
                )
        for p in PROFILES:
            looks_of(self.looks if "looks" not in self.profiles.get(p, {}) else self.profiles[p]["looks"], p)
        return self

    @model_validator(mode="after")
    def _hypothesis(self) -> Claim:
        if not self.hypothesis:
            return self
        if self.path and _in_shipped(self.path):
            raise ValueError(
                "source.kind: hypothesis: a shipped claim (sweeps/claims/) reproduces a published result, with "
                "source.published rows; keep your own hypothesis in a folder of yours (seqbench verify PATH)"
            )
        for section, rules in (("expect", self.expect), ("controls", self.controls)):
            for r in rules:
                if r.paper:
                    raise ValueError(
                        f"{section}: rule {r.name!r}: paper: is the published number a rule stands for, and a "
                        "hypothesis (source.kind: hypothesis) has none: drop it"
                    )
        return self

    def rules(self, profile: Profile) -> list[Rule]:
        return [r for r in self.expect if profile in r.profiles]

    def controls_for(self, profile: Profile) -> list[Rule]:
        return [r for r in self.controls if profile in r.profiles]

    def profile_block(self, profile: Profile) -> dict[str, Any]:
        """The claim file's own block of ``profile`` (KeyError for a profile other than quick or paper)."""
        if profile not in PROFILES:  # a notebook's string: the type says quick or paper, nothing checks it
            raise KeyError(profile)
        return self.profiles[profile]

    def resolved(self, profile: Profile) -> dict[str, Any]:
        """The sweep spec (or cost block) of ``profile``: the claim's, with the profile deep-merged
        (without ``looks``, which verify owns; see :meth:`looks_for`)."""
        out = deep_merge(self.spec, self.profile_block(profile))
        out.pop("looks", None)
        return out

    def looks_for(self, profile: Profile) -> list[int] | None:
        """The pre-registered seed counts of ``profile`` (a profile's ``looks:`` replaces the claim's)."""
        prof = self.profile_block(profile)
        return looks_of(prof["looks"] if "looks" in prof else self.looks, profile)

    def replicates_for(self, profile: Profile) -> int:
        """A cost claim's replicate count: the last look's, else ``replicates:`` (default 3)."""
        looks, reps = self.looks_for(profile), self.resolved(profile).get("replicates")
        if looks and reps is not None and reps != looks[-1]:
            raise UserError(
                f"cost.replicates: {reps!r} disagrees with looks: {looks} (profile {profile}); the last "
                f"look is the replicate count: drop replicates:"
            )
        return looks[-1] if looks else (3 if reps is None else reps)

    def seeds_for(self, profile: Profile) -> list[int]:
        """Every seed verify may use, in order: ``seeds:`` (a list or a count), default range(last look)."""
        looks = self.looks_for(profile)
        raw = self.resolved(profile).get("seeds")
        if raw is None:
            seeds = list(range(looks[-1] if looks else 1))
        elif isinstance(raw, int) and not isinstance(raw, bool):
            seeds = list(range(raw))
        else:
            seeds = [int(x) for x in raw]
        if looks and len(seeds) < looks[-1]:
            raise UserError(
                f"looks: the last look needs {looks[-1]} seeds; seeds: has "
                f"{len(seeds)} (drop seeds: for range({looks[-1]}))"
            )
        return seeds

    def digest(self, profile: Profile) -> str:
        """Short hash of the registration of ``profile``: settings, seeds (the ones verify may use), looks,
        rules, thresholds and controls (``registry.py``). Left out: what only explains (names, the paper's
        numbers, question, source, note, figure); a control is named by its place among the controls; a
        field at its default is left out, so a field added to the schema later leaves every digest as it was.
        A changed claim is a new registration; the same one resumes its study."""
        controls = self.controls_for(profile)
        names = {c.name: i for i, c in enumerate(controls)}

        def body(r: Rule) -> dict[str, Any]:
            d = r.model_dump(mode="json", exclude_defaults=True, exclude={"name", "paper", "profiles", "control"})
            c = r.control
            refs = [c["name"]] if isinstance(c, dict) else [c] if isinstance(c, str) else list(c or [])
            d["control"] = [names.get(n, n) for n in refs]
            return d

        resolved = self.resolved(profile)
        seeds = (
            list(range(self.replicates_for(profile)))
            if self.kind == "cost"
            else self.seeds_for(profile)[: (self.looks_for(profile) or [len(self.seeds_for(profile))])[-1]]
        )
        registration = {
            "kind": self.kind,
            "settings": {k: v for k, v in resolved.items() if k not in VERIFY_KEYS},
            "seeds": seeds,
            "looks": self.looks_for(profile),
            "rules": [body(r) for r in self.rules(profile)],
            "controls": [body(c) for c in controls],
        }
        return hashlib.sha256(json.dumps(registration, sort_keys=True, default=str).encode()).hexdigest()[:8]


def _in_shipped(path: str) -> bool:
    """Whether the claim file ``path`` is in the shipped claims' folder (links followed: an installed tree)."""
    p = Path(path)
    shipped = {SHIPPED, SHIPPED.resolve()}
    return p.parent in shipped or p.parent.resolve() in shipped or p.resolve().parent in shipped


def looks_of(looks: object, profile: Profile) -> list[int] | None:
    """Validated looks: increasing seed counts >= 2 (a verdict needs replicates)."""
    if looks is None:
        return None
    if (
        not isinstance(looks, list)
        or not looks
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in looks)
    ):
        raise ValueError(f"looks: a list of seed counts, e.g. [3, 5, 8] (profile {profile}: got {looks!r})")
    if looks[0] < 2 or any(b <= a for a, b in zip(looks, looks[1:])):
        raise ValueError(f"looks: increasing seed counts, the first >= 2 (profile {profile}: got {looks})")
    return list(looks)


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = json.loads(json.dumps(base, default=str))
    for k, v in over.items():
        out[k] = deep_merge(out[k], v) if isinstance(v, dict) and isinstance(out.get(k), dict) else v
    return out


def sweep_spec(claim: Claim, profile: Profile, question: str = "") -> SweepSpec:
    """The validated SweepSpec of ``profile`` (every run config built: a bad field fails here)."""
    return claim_grid(claim, profile, question).spec


def claim_grid(claim: Claim, profile: Profile, question: str = "", seeds: list[int] | None = None) -> GridStudy:
    """The grid study of ``profile`` (``sweeps.grid``, the builder of ``compare`` and ``probe`` too): the claim's
    spec with the profile merged, on ``seeds`` (a look's own), else on every seed verify may use (the claim's
    ``seeds:`` as written when it sets them and has no looks)."""
    raw = {"question": question or claim.question, **claim.resolved(profile)}
    if seeds is not None:
        raw["seeds"] = seeds
    elif claim.looks_for(profile) or "seeds" not in raw:
        raw["seeds"] = claim.seeds_for(profile)
    try:
        return grid_of(raw)
    except NotAGrid:
        raise UserError("method: claims judge fixed configurations; use method: grid") from None


def cost_config(resolved: Mapping[str, Any]) -> CostConfig:
    d = {k: v for k, v in resolved.items() if k not in COST_EXTRA}
    reps = resolved.get("replicates", 3)
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 2:
        raise UserError(f"cost.replicates: at least 2 (the exponents' interval is over replicates), got {reps!r}")
    try:
        cfg = CostConfig.model_validate(d)
    except ValidationError as e:
        raise UserError(
            "cost."
            + format_validation_error(
                e, tagged=frozenset(), allowed_fields=lambda loc: [*CostConfig.model_fields, *COST_EXTRA]
            )
        ) from None
    if len(cfg.lengths) < MIN_COST_LENGTHS:
        raise UserError(
            f"cost.lengths: at least {MIN_COST_LENGTHS} (an exponent fitted over fewer is mostly noise "
            f"and fixed cost), got {cfg.lengths}"
        )
    return cfg


def swept_values(claim: Claim, profile: Profile) -> dict[str, list[Any]]:
    if claim.kind == "cost":
        return {"model.name": list(cost_config(claim.resolved(profile)).models)}
    return {k: list(p.values or []) for k, p in sweep_spec(claim, profile).parameters.items()}
