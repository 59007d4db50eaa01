"""The parts of a claim file (``sweeps/claims/schema.py`` has the whole file and its checks): the
source with its published numbers and parameter counts, thresholds, and the rules that ``expect:``
and ``controls:`` list (how each is judged: ``sweeps/claims/judge.py``)."""

from __future__ import annotations

import re
from typing import Any, ClassVar, Literal

from pydantic import Field, field_validator, model_validator

from seqbench.bench.core.profiles import PROFILES, Profile
from seqbench.bench.core.schema import Section
from seqbench.bench.core.stats import metric_scale

# A rule name that states a multiple ("below 0.97x", "above 3 times", "ratio"): the rule must then judge a ratio
_READS_AS_RATIO = re.compile(
    r"\b(below|above|under|over|than|within|most|least)\s+\d*\.?\d+\s*(x\b|times\b)"
    r"(?!\s*(the\s+)?(memoryless\s+|unigram\s+)?(baseline|unigram))|\bratio\b",
    re.I,
)

Scalar = None | bool | int | float | str  # None: a swept null (e.g. optim.grad_clip: off)


class Published(Section):
    what: str = Field(min_length=1, description="the configuration the number is for, e.g. GRU")
    value: float = Field(description="the published number")
    unit: str = Field(min_length=1, description="its unit or metric, e.g. MSE, bits/char, exact match")


class ParamCount(Section):
    """The paper's parameter count beside seqbench's, for the paper-profile configurations ``where`` covers
    (checked against build_model by tests/sweeps/claims/test_claims_profiles.py)."""

    where: dict[str, Scalar] = Field(default_factory=dict, description="swept keys -> value, a subset ({} = all)")
    paper: int | None = Field(
        gt=0, description="the paper's count; null where the paper has no comparable architecture (then from: says why)"
    )
    seqbench: int = Field(gt=0, description="what build_model counts for those configurations")
    from_: str = Field(alias="from", min_length=1, description="where the paper states it, or 'derived: ...'")


class Source(Section):
    cite: str = Field(min_length=1, max_length=40, description="short citation for tables: Bai et al. 2018 Tab. 1")
    paper: str = Field(min_length=1, description="authors, year, title")
    where: str = Field(min_length=1, description="table or figure")
    metric: str = Field(min_length=1, description="the metric the paper's numbers use, defined")
    published: list[Published] = Field(min_length=1, description="the paper's numbers, with units")
    differs: str = Field("", description="where our measurement differs from theirs")
    params: list[ParamCount] = Field(
        default_factory=list,
        description="the paper's parameter counts beside seqbench's, per group of paper-profile configurations",
    )


class Baseline(Section):
    baseline: float = Field(description="this multiple of the task's memoryless baseline of the metric")


Threshold = float | Baseline


class OneBound(Section):
    """A threshold on one side: exactly one of ``below``/``above`` (``key`` names the section in the error)."""

    key: ClassVar[str]
    below: Threshold | None = Field(None, description="passes when the value is below this")
    above: Threshold | None = Field(None, description="passes when the value is above this")

    @model_validator(mode="after")
    def _one(self) -> OneBound:
        if (self.below is None) == (self.above is None):
            raise ValueError(f"{self.key}: give exactly one of below: / above:")
        return self

    @property
    def threshold(self) -> Threshold:
        """The one bound given (``below`` or ``above``; the validator holds that there is exactly one)."""
        t = self.below if self.below is not None else self.above
        assert t is not None
        return t


class Success(OneBound):
    """When one seed counts as a success (the rule then judges the success rate, exact binomial): its
    value passes ``below``/``above``; on a ``minus:`` rule its paired difference (ratio on scale: log),
    on a ``largest:`` rule its grid step (or the difference of grid steps)."""

    key = "success"


class Largest(OneBound):
    """The rule's quantity per seed: the largest value of the swept key ``over`` (e.g. optim.lr) at which
    that seed's run passes ``below``/``above`` on the rule's metric (it trained), as a grid step: 1 for
    the smallest swept value, 2 for the next ..., 0 where it passes at none (so "one step lower on most
    seeds" is ``minus: ..., success: {below: -0.5}, above: 0.5``, a sign test, on any grid). Grid steps
    are discrete and tie, so they are always judged per seed. A seed counts only when it has a run at
    every value of ``over``; a diverged run counts as the rule's ``diverged:`` says (``baseline``: did
    not train)."""

    key = "largest"
    over: str = Field(min_length=1, description="the swept key whose largest passing value is the quantity")


class BestOf(Section):
    """Swept keys a rule leaves free: each seed is judged at its best value of them (judge.py says why per
    seed and what that does to the statistics)."""

    params: list[str] = Field(min_length=1, description="swept keys the rule does not fix, e.g. [optim.lr]")
    goal: Literal["maximize", "minimize"] | None = Field(
        None,
        description="which value is best; default the claim's metric goal when the rule judges that "
        "metric (metric: solved: maximize)",
    )
    on: str = Field(
        "",
        description="the metric the best value is picked on, when it is not the one judged: pick on val/acc "
        "(validation batches), judge test/acc (test batches the pick never saw), so the pick's luck on its own "
        "batches is not judged; default the rule's metric",
    )


class Versus(Section):
    """The second seed-paired difference of a difference in differences: the rule judges, per seed,
    (where - minus) - (versus.where - versus.minus): "the fall with length is larger without attention than
    with it" (an interaction, where a fall any model shows by construction is taken out)."""

    where: dict[str, Scalar] = Field(description="the second difference's configuration (every swept key, or max/min)")
    minus: dict[str, Scalar] = Field(description="the configuration subtracted from it, paired by seed")


class Rule(Section):
    name: str = Field(min_length=1, description="what the rule checks, in words")
    where: dict[str, Scalar] = Field(description="the configuration: every swept key -> value (or max/min)")
    metric: str = Field(
        min_length=1,
        description="results.json final key (val/mse), best.<key>, solved (the "
        "run's solved flag), a diagnostics metric (diag/decay_rate@first) or a cost metric "
        "(time_exponent_long, flops_exponent_long, fixed_share)",
    )
    minus: dict[str, Scalar] | None = Field(None, description="judge where - minus, paired by seed")
    versus: Versus | None = Field(
        None,
        description="with minus: judge (where - minus) - (versus.where - versus.minus) per seed, a difference "
        "in differences (linear scale)",
    )
    below: Threshold | None = Field(None, description="the value (or difference) must be below this")
    above: Threshold | None = Field(None, description="the value (or difference) must be above this")
    between: list[Threshold] | None = Field(
        None,
        min_length=2,
        max_length=2,
        description="[lo, hi]: the value must lie inside this band (two-sided: 'at the baseline')",
    )
    success: Success | None = Field(
        None,
        description="a seed succeeds when its value (minus: its paired "
        "difference; largest: its grid step) passes this; the thresholds then apply "
        "to the share of seeds that succeed (exact binomial)",
    )
    by_mean: str = Field(
        "",
        description="why this rule's mean (Student-t) is a fair quantity although its "
        "metric is bounded, its threshold a baseline multiple or its diverged seeds imputed "
        "(else each seed is judged: a sign test on the share past the thresholds); shown "
        "beside the verdict",
    )
    largest: Largest | None = Field(
        None,
        description="judge, per seed, the grid step (1 = smallest) of the "
        "largest value of a swept key (largest.over, left out of where:) at which the "
        "run passes a threshold; 0 = none passes",
    )
    scale: Literal["auto", "linear", "log"] = Field(
        "auto",
        description="auto: the metric's (log for positive skewed metrics: loss, mse, bpc, ppl; else linear); "
        "on a minus: rule, log judges the paired ratio where/minus (thresholds are ratios: 0.97 = 3% lower), "
        "so a minus: rule on a loss is a ratio unless it says scale: linear (a difference in nats or bits)",
    )
    control: str | list[str] | dict[str, Any] | None = Field(
        None, description="the positive control(s) this rule needs: names in controls: (or one inline rule)"
    )
    no_control: str = Field(
        "",
        description="why this rule needs no positive control although it compares "
        "(e.g. measured at initialisation: nothing trains); shown beside the verdict",
    )
    diverged: Literal["inconclusive", "exclude", "baseline"] | float = Field(
        "inconclusive",
        description="what a diverged seed counts as: the rule becomes inconclusive, the seed is "
        "left out, it counts as the memoryless baseline (did not train), or as this value",
    )
    best_of: BestOf | None = Field(
        None,
        description="swept keys (optim.lr, or [optim.lr, ...], or {params: "
        "[...], goal: ...}) at whose best value each seed is judged: 'best of 3 "
        "learning rates'; where: leaves them out",
    )
    budget: str = Field(
        "",
        description="a negative rule ('did not learn'): the swept key holding the training budget "
        "(train.max_steps, swept to 4x or more); the rule is judged at each of its values, one row each, and holds "
        "only where it holds at all (sweeps/claims/negatives.py); where: leaves it out",
    )
    paper: str = Field("", description="the paper's number for this quantity, with unit, shown beside ours")
    profiles: list[Profile] = Field(
        default_factory=lambda: list(PROFILES),
        min_length=1,
        description="profiles the rule applies to (a configuration only the paper profile runs)",
    )

    @field_validator("best_of", mode="before")
    @classmethod
    def _best_of_short(cls, v: Any) -> Any:  # best_of: optim.lr / [optim.lr, optim.warmup_steps]
        return {"params": [v]} if isinstance(v, str) else {"params": v} if isinstance(v, list) else v

    @model_validator(mode="after")
    def _has_threshold(self) -> Rule:
        n = f"expect: rule {self.name!r}"
        if self.below is None and self.above is None and self.between is None:
            raise ValueError(f"{n} needs below:, above: or between:")
        if self.between is not None and (self.below is not None or self.above is not None):
            raise ValueError(f"{n}: between: is a band of its own; drop below:/above:")
        lo, hi = self.between or (None, None)
        if isinstance(lo, float) and isinstance(hi, float) and not lo < hi:
            raise ValueError(f"{n}: between: [lo, hi] needs lo < hi (got {self.between})")
        if self.minus is not None and any(isinstance(t, Baseline) for t in self.stated_thresholds()):
            raise ValueError(f"{n}: a difference (minus:) takes numeric thresholds")
        if self.versus is not None:
            self._check_versus(n)
        if self.rate:
            self._check_rate(n)
        if self.largest is not None:
            self._check_largest(n, self.largest)
        if self.budget and (self.largest is not None or self.minus is not None):
            raise ValueError(f"{n}: budget: judges a negative at each budget; it takes no largest:/minus:")
        fixed = [k for k in self.free if k in self.where or k in (self.minus or {})]
        if fixed:
            why = (
                "budget: the rule is judged at each of its values"
                if fixed[0] == self.budget
                else "best_of: it is chosen per seed"
                if self.best_of
                else "it is what largest: ranges over"
            )
            raise ValueError(f"{n}: {fixed[0]}: {why}; drop it from where:/minus:")
        if self.no_control and self.control is not None:
            raise ValueError(f"{n}: control: and no_control: contradict each other; keep one")
        if self.scale == "log" or self.ratio:
            cut = [self.success_cut] if self.success is not None and self.minus is not None else []
            bad = [t for t in (*self.stated_thresholds(), *cut) if isinstance(t, float) and t <= 0]
            if bad and self.ratio and self.scale == "auto":
                raise ValueError(
                    f"{n}: {self.metric} is judged on the log scale, so this minus: rule judges the ratio "
                    f"where/minus and its thresholds are ratios > 0 (got {bad[0]}); for a difference say scale: linear"
                )
            if bad:
                raise ValueError(f"{n}: scale: log needs thresholds > 0 (on a minus: rule, ratios), got {bad[0]}")
        said = _READS_AS_RATIO.search(self.name) if self.minus is not None and self.largest is None else None
        if said and not self.ratio:
            raise ValueError(
                f"{n}: the name reads as a ratio ({said.group(0)!r}) but the rule "
                f"judges the difference where - minus on the linear scale, where a threshold of "
                f"{self.stated_thresholds()[0]} is in the metric's own units; say scale: log (a ratio), or "
                "name the difference"
            )
        return self

    def _check_versus(self, n: str) -> None:
        """A difference in differences: a minus: rule, on the linear scale, without a per-seed pick."""
        if self.minus is None:
            raise ValueError(f"{n}: versus: is the second difference of a minus: rule; add minus:")
        if self.scale == "log":
            raise ValueError(f"{n}: versus: a difference in differences is judged on the linear scale; drop scale: log")
        if self.scale == "auto" and metric_scale(self.metric)[0] == "log":
            raise ValueError(
                f"{n}: versus: {self.metric} is a log-scale metric, but a difference in differences is judged on "
                "the linear scale (in its own units); say scale: linear"
            )
        if self.best_of is not None or self.largest is not None:
            raise ValueError(f"{n}: versus: takes no best_of:/largest: (a difference of measured values only)")

    def _check_rate(self, n: str) -> None:
        """A share of seeds: thresholds in (0, 1); success: on a difference or a grid step takes a number."""
        if self.minus is not None and self.success is None:
            raise ValueError(
                f"{n}: metric: solved is a flag per seed; a difference of flags is no per-seed "
                "outcome: compare values with success: on a minus: rule"
            )
        if (self.minus is not None or self.largest is not None) and isinstance(self.success_cut, Baseline):
            raise ValueError(f"{n}: success: on a difference or a grid step takes a number, not a baseline multiple")
        if self.by_mean:
            raise ValueError(f"{n}: by_mean: a success rate is judged per seed already; drop by_mean:")
        if self.success is not None and self.metric == "solved":
            raise ValueError(f"{n}: metric: solved is already a success per seed; drop success:")
        bad = [t for t in self.stated_thresholds() if not (isinstance(t, float) and 0 < t < 1)]
        if bad:
            raise ValueError(f"{n}: a success rate's thresholds are numbers in (0, 1), got {bad[0]!r}")

    @property
    def success_cut(self) -> Threshold | None:
        """success:'s threshold (a number or a Baseline); None without success:."""
        s = self.success
        return None if s is None else s.threshold

    def _check_largest(self, n: str, largest: Largest) -> None:
        """largest: judges a grid step of the swept key per seed: numeric thresholds, never a mean."""
        if self.metric == "solved":
            raise ValueError(f"{n}: largest: needs a metric to pass a threshold; metric: solved is a flag")
        if self.by_mean:
            raise ValueError(f"{n}: largest: grid steps are discrete and tie: judged per seed; drop by_mean:")
        if not self.rate and any(isinstance(t, Baseline) for t in self.stated_thresholds()):
            raise ValueError(f"{n}: largest: compares grid steps of {largest.over}: numeric thresholds")
        if self.best_of is not None:
            raise ValueError(f"{n}: largest: ranges over {largest.over} itself; drop best_of:")
        if self.scale == "log":
            raise ValueError(f"{n}: largest: is a grid step (0 where no value passes): no log; use scale: linear")

    def stated_thresholds(self) -> list[Threshold]:
        """below, above and between as written (numbers or baseline multiples)."""
        return [t for t in (self.below, self.above, *(self.between or [])) if t is not None]

    @property
    def free(self) -> list[str]:
        """The swept keys ``where`` leaves open: ``best_of``'s (picked per seed) or ``largest.over`` (the key
        the rule ranges over), and ``budget`` (judged at each value)."""
        budget = [self.budget] if self.budget else []
        if self.best_of is not None:
            return [*self.best_of.params, *budget]
        return [self.largest.over] if self.largest is not None else budget

    @property
    def ratio(self) -> bool:
        """A minus: rule judged as the seed-paired ratio where/minus (thresholds are ratios): scale: log, or
        scale: auto on a metric judged on the log scale (``stats.metric_scale``: loss, mse, bpc). A grid step
        (largest:) and a difference in differences (versus:) are always linear."""
        if self.minus is None or self.largest is not None or self.versus is not None:
            return False
        return self.scale == "log" or (self.scale == "auto" and metric_scale(self.metric)[0] == "log")

    @property
    def rate(self) -> bool:
        """Judged per seed as succeeded / not (exact binomial), not as a mean."""
        return self.metric == "solved" or self.success is not None

    @property
    def needs_control(self) -> bool:
        """A "did not learn" rule (above or inside a band of the baseline) or a comparison (minus:): it means
        nothing unless something trained in the same setting (issue 19: invalid, never holds or fails)."""
        if self.largest is not None:  # "does not train at the larger rate" or a comparison: both negative
            return not self.no_control
        at_baseline = isinstance(self.above, Baseline) or any(isinstance(b, Baseline) for b in self.between or [])
        return (at_baseline or self.minus is not None) and not self.no_control

    @property
    def control_names(self) -> list[str]:
        c = self.control
        if c is None:
            return []
        if isinstance(c, dict):
            return [str(c.get("name", ""))]
        return [c] if isinstance(c, str) else list(c)
