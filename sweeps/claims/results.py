"""What judging a claim returns and how it reads: a rule's result (its estimate, thresholds, p-values and
verdict; ``sweeps/claims/judge.py`` fills it), the claim's, and the verdict table that the terminal,
``verify.md`` and the page show. No torch, no statistics: text over results."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias

import pandas as pd

from seqbench.bench.core.cost_format import CostMeasurement
from seqbench.bench.core.profiles import Profile
from seqbench.bench.core.stats import Estimate, Interval
from seqbench.sweeps.claims.schema import Baseline, Claim, Rule, Threshold
from seqbench.sweeps.table import Objective

if TYPE_CHECKING:  # plotly is the reports' import; a claim's result only carries what they drew
    import plotly.graph_objects as go

HOLDS, FAILS, INCONCLUSIVE, MISSING, ERROR, INVALID = "holds", "fails", "inconclusive", "missing", "error", "invalid"
Drawn: TypeAlias = "go.Figure | str"  # a figure of a claim, or the line that says why it was skipped


@dataclass
class RuleResult:
    rule: Rule
    verdict: str
    interval: Interval | None = None
    thresholds: dict[str, float] = field(default_factory=dict)  # below/above/lo/hi (baseline-scaled) on the estimate
    n_diverged: int = 0
    why: str = ""
    config: str = ""
    estimate: Estimate | None = None
    p_holds: float = math.nan  # one-sided p that the quantity is inside the thresholds
    p_fails: float = math.nan  # ... that it is wholly outside
    p_alone: float = math.nan  # two-sided p of the direction the data points to, this rule alone
    p_adjusted: float = math.nan  # the same, Holm-adjusted over the claim's rules and controls
    control: bool = False  # a control (must hold) rather than a claim rule
    ratio: bool = False  # a minus: rule on the log scale: each seed's quantity is a log ratio (see log_ratio)
    beside: str = ""  # context shown after the measurement (cost: the FLOP count's exponent, fixed-cost share)
    picked: dict[Any, dict[str, Any]] = field(default_factory=dict)  # best_of: seed -> the values it was judged at
    sides: list[tuple[str, list[float]]] = field(default_factory=list)  # minus: each side's label and seed values
    per_seed: str = ""  # why each seed is judged (pass / not, a share of seeds): "success:" or per_seed_why's
    robust: str = ""  # a negative rule: how it survives a bigger budget, or that it is budget-bound (negatives.py)
    cut: dict[str, float] = field(default_factory=dict)  # per seed: what a seed passes (baseline-scaled; log: ratio)

    @property
    def log_ratio(self) -> bool:
        """The estimate and thresholds are log ratios where/minus, shown as ratios (a per-seed rule's estimate
        is a share of seeds, though each seed's quantity was a ratio)."""
        return self.ratio and not self.per_seed

    def measured(self) -> str:
        """``mean [lo, hi] n=k`` plus what happened to diverged seeds; the reason when nothing was measured."""
        if self.interval is None or self.interval.n == 0:
            return self.why or "no value"
        div = ""
        if self.n_diverged:
            d = self.rule.diverged
            div = (
                f" ({self.n_diverged} diverged"
                + (
                    ", left out"
                    if d == "exclude"
                    else ", as baseline"
                    if d == "baseline"
                    else f", as {d}"
                    if not isinstance(d, str)
                    else ""
                )
                + ")"
            )
        p = f", p={self.p_adjusted:.2g}" if math.isfinite(self.p_adjusted) else ""
        iv = self.interval
        if self.log_ratio:  # estimated as a log ratio, shown as the ratio where/minus
            iv = Interval(math.exp(iv.mean), math.exp(iv.lo), math.exp(iv.hi), iv.n, iv.std, iv.level)
        return ("ratio " if self.log_ratio else "") + iv.fmt() + div + p + (f"; {self.beside}" if self.beside else "")

    def threshold_text(self) -> str:
        """What the rule needs, on the quantity judged: ``< 0.01``, ``in [0.9, 1.1]``, or for a per-seed rule
        ``share of seeds with val/acc > 0.95: > 0.5``."""
        t = {k: math.exp(v) if self.log_ratio else v for k, v in self.thresholds.items()}
        text = _bounds_text(t)
        if not self.per_seed:
            return f"{quantity_text(self.rule)}: {text}" if self.rule.largest is not None else text
        r = self.rule
        if r.success is not None:
            cond = f"{'<' if r.success.below is not None else '>'} {_fmt_thr(r.success.threshold)}"
        else:
            cond = _bounds_text(
                {k: v for k, v in (("below", r.below), ("above", r.above)) if v is not None}
                if r.between is None
                else {"lo": r.between[0], "hi": r.between[1]}
            )
        what = ("ratio of " if self.ratio else "difference of ") if r.minus is not None else ""
        what = "difference in differences of " if r.versus is not None else what
        return f"share of seeds with {what}{quantity_text(r)} {cond}: {text}"


def _bounds_text(t: Mapping[str, Threshold]) -> str:
    if "lo" in t:
        return f"in [{_fmt_thr(t['lo'])}, {_fmt_thr(t['hi'])}]"
    return " and ".join(
        p
        for p in [
            f"< {_fmt_thr(t['below'])}" if "below" in t else "",
            f"> {_fmt_thr(t['above'])}" if "above" in t else "",
        ]
        if p
    )


def _fmt_thr(t: Threshold) -> str:
    return f"{t.baseline:g} x baseline" if isinstance(t, Baseline) else f"{t:.4g}"


@dataclass(frozen=True)
class ClaimResult:
    """One claim judged: built once by the runner (``sweeps/claims/runner.py``); ``bench/commands/verify.py``
    adds its figures with ``dataclasses.replace``."""

    claim: Claim
    profile: Profile
    verdict: str
    rules: list[RuleResult]
    wall_s: float = 0.0
    study: str = ""
    error: str = ""
    table: pd.DataFrame | None = None
    figure: list[Drawn] | Drawn | None = None  # plotly figures and "skipped: why" lines (the verify command draws them)
    controls: list[RuleResult] = field(default_factory=list)
    looks: str = ""  # which look decided it: "look 2 of 3 (n=5)"
    why: str = ""  # for invalid: which control
    objective: Objective | None = None  # a sweep claim: its study's objective (what its named figure plots)
    measurement: CostMeasurement | None = None  # a cost claim: its first replicate (bench.training.cost.measure_cost)

    def verdict_text(self) -> str:
        """``invalid (control: TCN learns)``, ``holds (look 2 of 3, n=5)``: what the CLI and the page print."""
        detail = "; ".join(x for x in (self.why, self.looks) if x)
        return f"{self.verdict} ({detail})" if detail else self.verdict


def claim_verdict(rules: Sequence[RuleResult], controls: Sequence[RuleResult] = ()) -> tuple[str, str]:
    """The claim's verdict and, for invalid, why."""
    for c in controls:
        if c.verdict == FAILS:
            return INVALID, f"control: {c.rule.name}"
    for r in rules:
        if r.verdict == INVALID:
            return INVALID, f"no control for rule {r.rule.name!r}"
    verdicts = {r.verdict for r in rules}
    if FAILS in verdicts:
        return FAILS, ""
    if verdicts == {HOLDS}:
        return HOLDS, ""
    return INCONCLUSIVE, ""


def quantity_text(rule: Rule, long: bool = True) -> str:
    """The per-seed quantity a rule's thresholds apply to: its metric, or for largest: the grid step (``long``:
    with the threshold a run must pass)."""
    lg = rule.largest
    if lg is None:
        return rule.metric
    if not long:
        return f"grid step of the largest {lg.over}"
    return (
        f"grid step of the largest {lg.over} per seed with {rule.metric} {'<' if lg.below is not None else '>'} "
        f"{_fmt_thr(lg.threshold)}"
    )


def _needs(r: RuleResult) -> str:
    """The verdict table's needs cell: the thresholds and why the rule is judged the way it is."""
    notes = [
        f"no control: {r.rule.no_control}" if r.rule.no_control else "",
        f"per seed: {r.per_seed}" if r.per_seed and r.rule.success is None else "",
        f"by mean: {r.rule.by_mean}" if r.rule.by_mean else "",
        r.robust,
    ]
    return r.threshold_text() + "".join(f" ({n})" for n in notes if n)


def verdict_table(results: list[ClaimResult]) -> pd.DataFrame:
    """One row per rule (controls first, marked): claim | source | rule | configuration | paper | measured |
    needs | verdict (rule), and the claim's verdict and wall time on each of its rows (what the CLI,
    verify.md and the page show)."""
    rows = []
    for res in results:
        src = res.claim.source.cite
        claim_cols = {
            "claim": res.claim.name,
            "source": src,
            "claim verdict": res.verdict_text(),
            "wall s": round(res.wall_s),
        }
        if not res.rules:
            rows.append(
                {
                    **claim_cols,
                    "rule": "-",
                    "configuration": "",
                    "paper": "",
                    "measured (mean [95% CI] n)": res.error or "not judged",
                    "needs": "",
                    "verdict": res.verdict,
                }
            )
        for r in [*res.controls, *res.rules]:
            rows.append(
                {
                    **claim_cols,
                    "rule": ("control: " if r.control else "") + r.rule.name,
                    "configuration": r.config,
                    "paper": r.rule.paper,
                    "measured (mean [95% CI] n)": f"{quantity_text(r.rule, long=False)}: {r.measured()}",
                    "needs": _needs(r),
                    "verdict": r.verdict + (f" ({r.why})" if r.why and r.verdict != HOLDS else ""),
                }
            )
    return pd.DataFrame(rows)
