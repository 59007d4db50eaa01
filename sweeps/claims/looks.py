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

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile
from seqbench.bench.core.stats import Estimate, holm, look_alphas
from seqbench.sweeps.claims.judge import decided, judge_all
from seqbench.sweeps.claims.measure import per_seed_why
from seqbench.sweeps.claims.results import ClaimResult, RuleResult
from seqbench.sweeps.claims.schema import ALPHA, Claim, Rule


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

    def result(self, claim: Claim, profile: Profile, **kw: Any) -> ClaimResult:
        return ClaimResult(
            claim, profile, self.verdict, self.rules, controls=self.controls, why=self.why, looks=self.said, **kw
        )


def judge_look(
    claim: Claim,
    table: pd.DataFrame,
    swept: dict[str, list[Any]],
    profile: Profile,
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


def per_seed_members(claim: Claim, profile: Profile) -> list[Rule]:
    """The rules and controls of ``profile`` the judge tests per seed (a share of seeds, exact binomial)."""
    return [r for r in [*claim.controls_for(profile), *claim.rules(profile)] if r.rate or per_seed_why(r)]


def best_p(rule: Rule, n: int) -> float:
    """The smallest two-sided p a per-seed rule can reach over ``n`` seeds: every seed passing its cut,
    or every seed failing it, tested against the rule's thresholds on the share (1/2 by default)."""
    share: dict[str, float] = {"above": 0.5}  # the sign test of per_seed_why
    if rule.success is not None or rule.metric == "solved":  # the rule's own thresholds on the share
        above, below = rule.between or (rule.above, rule.below)
        share = {k: v for k, v in (("above", above), ("below", below)) if isinstance(v, float)}
    flip = {"above": "below", "below": "above"}
    best = 1.0
    for v in (0.0, 1.0):
        est = Estimate((v,) * n, "rate", (0.0, 1.0))
        holds = max(est.p_value(t, side) for side, t in share.items())
        fails = min(est.p_value(t, flip[side]) for side, t in share.items())
        best = min(best, 2 * min(holds, fails))
    return best


def _stuck(members: list[Rule], n: int, alpha: float) -> list[tuple[Rule, float, float]]:
    """The per-seed members that cannot be decided at ``n`` seeds and ``alpha`` even when every seed agrees:
    (rule, best p, its Holm-adjusted p at best, every other member already decided with a smaller p)."""
    ps = [best_p(r, n) for r in members]
    return [(r, p, adj) for r, p, adj in zip(members, ps, holm(ps)) if adj > alpha]


def undecidable_looks(claim: Claim, profile: Profile) -> list[str]:
    """The looks of ``profile`` at which some per-seed rule or control cannot be decided even when every
    seed agrees: its best p (:func:`best_p`), Holm-adjusted over the profile's per-seed members (at best:
    every other member already decided with a smaller p), above the alpha that look spends. A look listed
    can never stop the claim (every member must be decided), so it only spends alpha; a profile whose LAST
    look is listed can never decide that rule. Cost claims alike (their looks count replicates; a bounded
    metric such as ``fixed_share`` is judged per replicate)."""
    members = per_seed_members(claim, profile)
    looks = claim.looks_for(profile) or [_count(claim, profile)]
    out = []
    for k, (n, a) in enumerate(zip(looks, look_alphas(looks, ALPHA))):
        stuck = _stuck(members, n, a)
        if stuck:
            r, p, adj = stuck[0]
            holm_text = f", {adj:.3g} after Holm over {len(members)} per-seed rules" if len(members) > 1 else ""
            out.append(
                f"look {k + 1} (n={n}) cannot decide a per-seed rule ({len(stuck)} of {len(members)}, e.g. "
                f"{r.name!r}): even {n} of {n} seeds agreeing give p = {p:.3g}{holm_text}, above its alpha {a:.3g}"
            )
    return out


def _count(claim: Claim, profile: Profile) -> int:
    return claim.replicates_for(profile) if claim.kind == "cost" else len(claim.seeds_for(profile))


def smallest_deciding_n(claim: Claim, profile: Profile, most: int = 200) -> int | None:
    """The fewest seeds (cost: replicates) at which one look at alpha 0.05 could decide every per-seed rule
    and control of ``profile`` (2 when none is judged per seed); None beyond ``most``."""
    members = per_seed_members(claim, profile)
    return next((n for n in range(2, most + 1) if not _stuck(members, n, ALPHA)), None)


def check_decidable(claim: Claim, profile: Profile, registered: bool) -> None:
    """Refuse, before anything trains, a claim whose looks cannot decide it (:func:`undecidable_looks`): its
    last look, always (it could only end inconclusive); an earlier look, when the claim is not registered
    yet (that look spends alpha and can never stop the claim). A registration made before this check keeps
    its looks (they are locked with its seeds); ``verify --plan`` lists such a look."""
    dead = undecidable_looks(claim, profile)
    looks = claim.looks_for(profile) or [_count(claim, profile)]
    last = f"look {len(looks)} "
    fatal = [w for w in dead if w.startswith(last)] or ([] if registered else dead)
    if not fatal:
        return
    n = smallest_deciding_n(claim, profile)
    unit = "replicates" if claim.kind == "cost" else "seeds"
    fix = (
        f"the smallest n that could decide every per-seed rule at one look is {n} {unit}"
        if n
        else "no n up to 200 could decide it (a rule's share thresholds leave no room)"
    )
    raise UserError(
        f"claim {claim.name} (profile {profile}): {fatal[0]}; it cannot decide the claim, so nothing runs: {fix} "
        f"(looks: [{n}]" + ("" if claim.kind == "sweep" else " or replicates:") + "; or fewer per-seed rules)"
    )
