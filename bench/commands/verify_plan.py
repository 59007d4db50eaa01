"""``seqbench verify --plan``: what a verify would run, before anything runs: per claim its study, its
configurations, seeds and looks (or a cost claim's measurement grid), and an estimate of the time.

The estimate is per run ``steps x seconds per step``, where the seconds per step come from the runs
already under ``--out-dir`` with the same task and model (their wall time over their steps: validation
and start-up included), else from ``GUESS_STEP_S`` (said so). Looks after the first run only when the
first does not decide, so the plan gives the first look's time and the time if every look runs.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from pathlib import Path

from seqbench.bench.core.artifacts import read_results, runs_path
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.profiles import Profile
from seqbench.bench.core.text import duration
from seqbench.sweeps.claims.looks import check_decidable, smallest_deciding_n, undecidable_looks
from seqbench.sweeps.claims.registry import check, load_registry, registry_path
from seqbench.sweeps.claims.schema import Claim, cost_config, sweep_spec
from seqbench.sweeps.spec import trial_config

GUESS_STEP_S = 0.02  # a small model's CPU step with its share of validation (the quick profiles' order)
GUESS_POINT_S = 3.0  # one cost point: warm-up and timed steps in a child process


@dataclass
class ClaimPlan:
    name: str
    line: str  # what runs, in words
    first_s: float  # the first look's estimated seconds (one worker)
    all_s: float  # every look's
    guessed: list[str]  # task/model pairs with no earlier run here


def step_seconds(out_dir: Path) -> dict[tuple[str, str], float]:
    """(task, model) -> median wall seconds per step of the finished runs under ``out_dir``."""
    seen: dict[tuple[str, str], list[float]] = {}
    for d in runs_path(out_dir).glob("*/"):
        r = read_results(d) or {}
        if r.get("steps") and r.get("wall_time_s") and r.get("status") == "completed":
            seen.setdefault((r.get("task", ""), r.get("model", "")), []).append(r["wall_time_s"] / r["steps"])
    return {k: statistics.median(v) for k, v in seen.items()}


def registration_text(claim: Claim, profile: Profile) -> str:
    """The registration the claim would run under (``registry.py``), or why verify would refuse it; and the
    looks that cannot decide it, with the smallest n that could (``looks.check_decidable``)."""
    path = registry_path(claim)
    every = load_registry(path).of(claim.name, profile) if path else []
    try:
        reg, new = check(claim, profile)
        check_decidable(claim, profile, registered=not new)
    except UserError as e:
        return f"\n    REFUSED: {e}"
    count = f"{len(every) + new} registration(s) of this claim at profile {profile} so far"
    line = (
        f"\n    registration: new, {reg.digest} on seeds {reg.seeds[0]}-{reg.seeds[-1]} (verify registers it; {count})"
        if new
        else f"\n    registration: {reg.digest}, registered {reg.registered} ({count})"
    )
    dead = undecidable_looks(claim, profile)
    if dead:
        n = smallest_deciding_n(claim, profile)
        line += (
            "".join(f"\n    note: {w}" for w in dead)
            + f"\n    note: the smallest n that could decide it at one look: {n}"
        )
    return line


def plan_claim(claim: Claim, profile: Profile, history: dict[tuple[str, str], float]) -> ClaimPlan:
    if claim.kind == "cost":
        cfg = cost_config(claim.resolved(profile))
        looks = claim.looks_for(profile) or [claim.replicates_for(profile)]
        points = len(cfg.models) * len(cfg.lengths)
        line = (
            f"cost measurement, {len(cfg.models)} models x lengths {cfg.lengths} = {points} points per "
            f"replicate; replicates (looks) {looks}"
        ) + registration_text(claim, profile)
        return ClaimPlan(
            claim.name, line, points * looks[0] * GUESS_POINT_S, points * looks[-1] * GUESS_POINT_S, ["cost points"]
        )
    spec = sweep_spec(claim, profile)
    seeds = claim.seeds_for(profile)
    looks = claim.looks_for(profile) or [len(seeds)]
    per_seed, guessed = 0.0, []
    for point in spec.grid():
        cfg = trial_config(spec, point, seeds[0], {})
        key = (cfg.task.name, cfg.model.name)
        if key not in history and "/".join(key) not in guessed:
            guessed.append("/".join(key))
        per_seed += cfg.train.max_steps * history.get(key, GUESS_STEP_S)
    swept = " x ".join(f"{k}: {', '.join(map(str, p.values or []))}" for k, p in spec.parameters.items())
    left = spec.left_out()
    line = (
        f"study verify-{claim.name}-{profile}-{claim.digest(profile)}; {spec.budget()} configurations "
        f"({swept or 'one'}{f'; {left} left out by exclude:' if left else ''}); "
        f"seeds {seeds}; looks {looks}: {spec.budget() * looks[0]} runs at the first look, "
        f"{spec.budget() * looks[-1]} if every look runs"
    )
    line += registration_text(claim, profile)
    return ClaimPlan(claim.name, line, per_seed * looks[0], per_seed * looks[-1], guessed)


def plan_text(claims: list[Claim], profile: Profile, out_dir: Path, workers: int) -> str:
    """The plan as lines: one per claim, an estimate per claim and in all; nothing is run."""
    history = step_seconds(out_dir)
    plans = [plan_claim(c, profile, history) for c in claims]
    lines = [f"plan: {len(plans)} claim(s), profile {profile}, {workers} worker(s), out-dir {out_dir}; nothing has run"]
    for p in plans:
        est = f"about {duration(p.first_s / workers)}" + (
            f" (up to {duration(p.all_s / workers)} if every look runs)" if p.all_s > p.first_s else ""
        )
        note = f"; guessed for {', '.join(p.guessed)} (no earlier run here)" if p.guessed else ""
        lines += [f"  {p.name}: {p.line}", f"    time: {est}{note}"]
    first, every = sum(p.first_s for p in plans) / workers, sum(p.all_s for p in plans) / workers
    lines.append(
        f"total: about {duration(first)}" + (f", up to {duration(every)} if every look runs" if every > first else "")
    )
    return "\n".join(lines)
