"""What a sweep prints: a line when a trial starts, one when it ends (with ``[done/total, ETA]``),
and the closing table of the best configurations.

Counts are the study's (every worker's trials), so with K workers the ETA reflects K trials in
flight; the rate is measured over this process's lifetime, so it needs one finished trial first.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.text import duration, text_table
from seqbench.sweeps.liveness import superseded
from seqbench.sweeps.study import counts_as_done, failed_outside


@dataclass
class Progress:
    """``[done/total, ETA]`` for the lines of one process."""

    total: int
    done_at_start: int
    started: float = field(default_factory=time.monotonic)

    def tag(self, done: int) -> str:
        left = max(0, self.total - done)
        if not left:
            return f"[{done}/{self.total}]"
        gained = done - self.done_at_start
        if gained <= 0:
            return f"[{done}/{self.total}, ETA unknown]"
        return f"[{done}/{self.total}, ETA {duration(left * (time.monotonic() - self.started) / gained)}]"


def start_line(number: int, params: dict[str, Any]) -> str:
    """One line when a trial starts: its number and configuration."""
    return "  ".join(p for p in (f"trial {number:>4}", f"{'RUNNING':<8}", _params(params)) if p)


def _params(params: dict[str, Any]) -> str:
    return " ".join(f"{k}={_fmt(v)}" for k, v in params.items())


def _fmt(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _value(t: FrozenTrial, metrics) -> str:
    mean, std = t.user_attrs.get("mean"), t.user_attrs.get("std")
    if mean is None:
        return ""
    means = mean if isinstance(mean, list) else [mean]
    stds = std if isinstance(std, list) else [std]
    n = len([v for v in t.user_attrs.get("per_seed", []) if v is not None])
    return "  ".join(f"{m.name} {a:.4f}" + (f"±{s:.4f}" if n > 1 else "") for m, a, s in zip(metrics, means, stds))


def trial_line(t: FrozenTrial, metrics, progress: str = "") -> str:
    """One line per finished trial: number, state, value, params, wall time, ``[done/total, ETA]``
    (and why, if not complete)."""
    why = t.user_attrs.get("fail_reason") or t.user_attrs.get("prune_reason") or ""
    parts = [
        f"trial {t.number:>4}",
        f"{t.state.name:<8}",
        _value(t, metrics),
        _params(t.params),
        duration(t.user_attrs.get("wall_s", 0)),
        progress,
        f"({why})" if why else "",
    ]
    return "  ".join(p for p in parts if p)


def best_trials(trials: list[FrozenTrial], spec, k: int = 10) -> list[FrozenTrial]:
    """Single objective: the top ``k`` complete trials; several: the Pareto front."""
    done = [t for t in trials if t.state == TrialState.COMPLETE and t.values]
    metrics = spec.metrics()
    signs = [1 if m.goal == "maximize" else -1 for m in metrics]
    if len(metrics) == 1:
        return sorted(done, key=lambda t: -signs[0] * t.values[0])[:k]

    def dominated(a: FrozenTrial) -> bool:
        return any(
            all(s * b.values[i] >= s * a.values[i] for i, s in enumerate(signs))
            and any(s * b.values[i] > s * a.values[i] for i, s in enumerate(signs))
            for b in done
        )

    return sorted((t for t in done if not dominated(t)), key=lambda t: -signs[0] * t.values[0])


def failed_trials(trials: list[FrozenTrial]) -> list[FrozenTrial]:
    """FAIL trials that stand (not being retried): their configurations have no result."""
    gone = superseded(trials)
    return [t for t in trials if t.state == TrialState.FAIL and t.number not in gone]


def done_text(trials: list[FrozenTrial]) -> str:
    """``4 done`` and, when some of those failed, how many and what ``--retry-failed`` would run again."""
    gone = superseded(trials)
    done = sum(1 for t in trials if counts_as_done(t, gone))
    failed = failed_trials(trials)
    if not failed:
        return f"{done} done"
    outside = sum(1 for t in failed if failed_outside(t))
    again = (
        f"{outside} outside the experiment (no space, memory, a kill), which --retry-failed runs again"
        if outside
        else "none outside the experiment, so --retry-failed has nothing to run again"
    )
    return f"{done} done, {len(failed)} of them failed: {again}"


def _row(t: FrozenTrial, keys: list[str], metrics) -> list[str]:
    if t.state != TrialState.COMPLETE:
        vals = [t.state.name for _ in metrics]
    else:
        mean, std = t.user_attrs.get("mean"), t.user_attrs.get("std")
        means = mean if isinstance(mean, list) else [mean]
        stds = std if isinstance(std, list) else [std]
        n = len([v for v in t.user_attrs.get("per_seed", []) if v is not None])
        vals = [f"{a:.4f}" + (f" ± {s:.4f}" if n > 1 else "") for a, s in zip(means, stds)]
    return [
        str(t.number),
        *(_fmt(t.params.get(k, "")) for k in keys),
        *vals,
        str(len(t.user_attrs.get("seeds", []))),
        f"{t.user_attrs.get('wall_s', 0):.0f}",
    ]


def summary(trials: list[FrozenTrial], spec) -> str:
    """Trials by state, the best configurations and, after them, every configuration whose trial
    failed (never left out: a failure is a finding, or something ``--retry-failed`` runs again)."""
    metrics = spec.metrics()
    by: dict[str, int] = {}
    gone = superseded(trials)
    for t in trials:
        name = "retried" if t.number in gone else t.state.name.lower()
        by[name] = by.get(name, 0) + 1
    lines = [f"{len(trials)} trials: " + ", ".join(f"{n} {s}" for s, n in sorted(by.items()))]
    best, failed = best_trials(trials, spec), failed_trials(trials)
    if not best:
        lines.append("no complete trial yet")
    if not best and not failed:
        return "\n".join(lines)
    keys = list(spec.parameters)
    head = ["trial", *keys, *(f"{m.name} ({m.goal[:3]})" for m in metrics), "seeds", "wall_s"]
    title = "Pareto front" if len(metrics) > 1 else "best configurations"
    lines += [
        f"{title}" + (" and failed ones" if failed else "") + ":",
        text_table(head, [_row(t, keys, metrics) for t in [*best, *failed]], indent="  "),
    ]
    lines += [
        f"  trial {t.number} failed: {t.user_attrs.get('fail_reason') or 'no reason recorded'}" for t in failed[:10]
    ]
    outside = [t for t in failed if failed_outside(t)]
    if outside:
        lines.append(
            f"{len(outside)} failed outside the experiment (no space, memory, a kill): run the same "
            "command with --retry-failed to run them again"
        )
    return "\n".join(lines)
