"""``seqbench verify --plan``: what a verify would run, before anything runs: per claim its study, its
configurations, seeds and looks (or a cost claim's measurement grid), and an estimate of the time.

The estimate is per run ``steps x seconds per step``, where the seconds per step come from the runs
already under ``--out-dir`` with the same task, model and mixer (their wall time over their steps:
validation and start-up included), else from ``GUESS_STEP_S`` (said so). A look is one sweep whose
trials each train one configuration's seeds one after another, taken by the workers in the study's queue
order (``sweeps.study.queue_order``: the longest trainings first with several workers), so its time is
that schedule's end (``makespan``): at least the longest configuration's seeds in a row, however many
workers there are. Looks after the first run only when the first does not decide, so the plan gives the
first look's time and the time if every look runs.
"""

from __future__ import annotations

import heapq
import statistics
from collections.abc import Sequence
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
from seqbench.sweeps.study import queue_order

GUESS_STEP_S = 0.02  # a small model's CPU step with its share of validation (the quick profiles' order)
GUESS_POINT_S = 3.0  # one cost point: warm-up and timed steps in a child process


Kind = tuple[str, str, str]  # (task, model, mixer or ""): runs of one kind cost alike per step


@dataclass
class ClaimPlan:
    name: str
    line: str  # what runs, in words
    config_s: list[float]  # one seed of each configuration, estimated seconds, in the order workers take them
    looks: list[int]  # seeds run by the end of each look
    guessed: list[str]  # kinds of run with no earlier run here

    def seconds(self, workers: int, every_look: bool = False) -> float:
        """The first look's estimated time on ``workers`` workers, or every look's (each look its own sweep)."""
        new = [b - a for a, b in zip([0, *self.looks], self.looks)]
        return sum(makespan([c * n for c in self.config_s], workers) for n in (new if every_look else new[:1]))


def makespan(jobs: Sequence[float], workers: int) -> float:
    """When the last of ``jobs`` ends, each taken in order by the first worker free (a study's queue)."""
    free = [0.0] * max(1, min(workers, len(jobs)))
    for j in jobs:
        heapq.heappush(free, heapq.heappop(free) + j)
    return max(free)


def step_seconds(out_dir: Path) -> dict[Kind, float]:
    """(task, model, mixer) -> median wall seconds per step of the finished runs under ``out_dir``."""
    seen: dict[Kind, list[float]] = {}
    for d in runs_path(out_dir).glob("*/"):
        r = read_results(d) or {}
        if r.get("steps") and r.get("wall_time_s") and r.get("status") == "completed":
            mixer = ((r.get("config") or {}).get("model") or {}).get("mixer") or ""
            seen.setdefault((r.get("task", ""), r.get("model", ""), str(mixer)), []).append(
                r["wall_time_s"] / r["steps"]
            )
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


def plan_claim(claim: Claim, profile: Profile, history: dict[Kind, float], workers: int = 1) -> ClaimPlan:
    if claim.kind == "cost":  # its replicates measured one after another in one process
        cfg = cost_config(claim.resolved(profile))
        looks = claim.looks_for(profile) or [claim.replicates_for(profile)]
        points = len(cfg.models) * len(cfg.lengths)
        line = (
            f"cost measurement, {len(cfg.models)} models x lengths {cfg.lengths} = {points} points per "
            f"replicate; replicates (looks) {looks}"
        ) + registration_text(claim, profile)
        return ClaimPlan(claim.name, line, [points * GUESS_POINT_S], looks, ["cost points"])
    spec = sweep_spec(claim, profile)
    seeds = claim.seeds_for(profile)
    looks = claim.looks_for(profile) or [len(seeds)]
    config_s, guessed = [], []
    for point in queue_order(spec, longest_first=workers > 1):
        cfg = trial_config(spec, point, seeds[0], {})
        key = (cfg.task.name, cfg.model.name, str(getattr(cfg.model, "mixer", None) or ""))
        if key not in history and "/".join(filter(None, key)) not in guessed:
            guessed.append("/".join(filter(None, key)))
        config_s.append(cfg.train.max_steps * history.get(key, GUESS_STEP_S))
    swept = " x ".join(f"{k}: {', '.join(map(str, p.values or []))}" for k, p in spec.parameters.items())
    left = spec.left_out()
    line = (
        f"study verify-{claim.name}-{profile}-{claim.digest(profile)}; {spec.budget()} configurations "
        f"({swept or 'one'}{f'; {left} left out by exclude:' if left else ''}); "
        f"seeds {seeds}; looks {looks}: {spec.budget() * looks[0]} runs at the first look, "
        f"{spec.budget() * looks[-1]} if every look runs"
    )
    line += registration_text(claim, profile)
    return ClaimPlan(claim.name, line, config_s, looks, guessed)


def plan_text(claims: list[Claim], profile: Profile, out_dir: Path, workers: int) -> str:
    """The plan as lines: one per claim, an estimate per claim and in all; nothing is run."""
    history = step_seconds(out_dir)
    plans = [plan_claim(c, profile, history, workers) for c in claims]
    lines = [f"plan: {len(plans)} claim(s), profile {profile}, {workers} worker(s), out-dir {out_dir}; nothing has run"]
    for p in plans:
        first, every = p.seconds(workers), p.seconds(workers, every_look=True)
        est = f"about {duration(first)}" + (f" (up to {duration(every)} if every look runs)" if every > first else "")
        if workers > 1 and len(p.config_s) > 1 and first <= max(p.config_s) * p.looks[0] * (1 + 1e-9):
            est += f", all of it one configuration's {p.looks[0]} seeds one after another"
        note = f"; guessed for {', '.join(p.guessed)} (no earlier run here)" if p.guessed else ""
        lines += [f"  {p.name}: {p.line}", f"    time: {est}{note}"]
    first = sum(p.seconds(workers) for p in plans)
    every = sum(p.seconds(workers, every_look=True) for p in plans)
    lines.append(
        f"total: about {duration(first)}" + (f", up to {duration(every)} if every look runs" if every > first else "")
    )
    return "\n".join(lines)
