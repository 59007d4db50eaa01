"""Sequential looks: after each look a claim's rules are judged at that look's share of alpha 0.05
(``stats.look_alphas``: O'Brien-Fleming-type spending, most of it kept for the last look; the shares sum
to 0.05, so the stated 95% holds whichever look stops), and the claim stops at the first look that
decides every rule or finds a failed control. Shared by sweep claims (looks of seeds) and cost claims
(looks of replicates)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd

from seqbench.bench.core.stats import look_alphas
from seqbench.sweeps.claims.judge import ClaimResult, RuleResult, decided, judge_all
from seqbench.sweeps.claims.schema import ALPHA, Claim


@dataclass(frozen=True)
class Look:
    """Look ``k`` of ``looks`` (the seed or replicate count at each look); ``n`` says what it measured."""

    looks: list[int]
    k: int
    n: str  # "n=5", "n=3 replicates"

    @property
    def alpha(self) -> float:
        return look_alphas(self.looks, ALPHA)[self.k]

    @property
    def last(self) -> bool:
        return self.k == len(self.looks) - 1

    def text(self) -> str:
        return f"look {self.k + 1} of {len(self.looks)}, {self.n}, alpha {self.alpha:.3g}"


@dataclass(frozen=True)
class Judged:
    """What judging at one look found: judge_all's verdict, rules, controls and why; whether it decided."""

    verdict: str
    rules: list[RuleResult]
    controls: list[RuleResult]
    why: str
    done: bool
    said: str  # "decided at look k of K, ..." or "undecided after ..."

    def result(self, claim: Claim, profile: str, **kw: Any) -> ClaimResult:
        return ClaimResult(
            claim, profile, self.verdict, self.rules, controls=self.controls, why=self.why, looks=self.said, **kw
        )


def judge_look(
    claim: Claim,
    table: pd.DataFrame,
    swept: dict[str, list[Any]],
    profile: str,
    look: Look,
    next_step: Callable[[], str],
) -> Judged:
    """Judge everything measured up to ``look`` at the alpha that look spends; print the look's verdict
    and, if undecided with looks left, ``next_step()``."""
    verdict, rules, controls, why = judge_all(claim, table, swept, profile, look.alpha)
    done = decided(verdict, rules, controls)
    if len(look.looks) > 1:
        print(
            f"[verify] {claim.name}: {look.text()}: {verdict}"
            + ("" if done or look.last else f"; undecided, {next_step()}"),
            flush=True,
        )
    return Judged(verdict, rules, controls, why, done, ("decided at " if done else "undecided after ") + look.text())
