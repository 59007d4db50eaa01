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
    parts = [f"trial {t.number:>4}", f"{t.state.name:<8}", _value(t, metrics), _params(t.params),
             duration(t.user_attrs.get('wall_s', 0)), progress, f"({why})" if why else ""]
    return "  ".join(p for p in parts if p)


def best_trials(trials: list[FrozenTrial], spec, k: int = 10) -> list[FrozenTrial]:
    """Single objective: the top ``k`` complete trials; several: the Pareto front."""
    done = [t for t in trials if t.state == TrialState.COMPLETE and t.values]
    metrics = spec.metrics()
    signs = [1 if m.goal == "maximize" else -1 for m in metrics]
    if len(metrics) == 1:
        return sorted(done, key=lambda t: -signs[0] * t.values[0])[:k]

    def dominated(a: FrozenTrial) -> bool:
        return any(all(s * b.values[i] >= s * a.values[i] for i, s in enumerate(signs))
                   and any(s * b.values[i] > s * a.values[i] for i, s in enumerate(signs)) for b in done)
    return sorted((t for t in done if not dominated(t)), key=lambda t: -signs[0] * t.values[0])


def summary(trials: list[FrozenTrial], spec) -> str:
    metrics = spec.metrics()
    by: dict[str, int] = {}
    gone = superseded(trials)
    for t in trials:
        name = "retried" if t.number in gone else t.state.name.lower()
        by[name] = by.get(name, 0) + 1
    lines = [f"{len(trials)} trials: " + ", ".join(f"{n} {s}" for s, n in sorted(by.items()))]
    best = best_trials(trials, spec)
    if not best:
        lines.append("no complete trial yet")
        return "\n".join(lines)
    keys = list(spec.parameters)
    head = ["trial", *keys, *(f"{m.name} ({m.goal[:3]})" for m in metrics), "seeds", "wall_s"]
    rows = []
    for t in best:
        mean, std = t.user_attrs.get("mean"), t.user_attrs.get("std")
        means = mean if isinstance(mean, list) else [mean]
        stds = std if isinstance(std, list) else [std]
        n = len([v for v in t.user_attrs.get("per_seed", []) if v is not None])
        vals = [f"{a:.4f}" + (f" ± {s:.4f}" if n > 1 else "") for a, s in zip(means, stds)]
        rows.append([str(t.number), *(_fmt(t.params.get(k, "")) for k in keys), *vals,
                     str(len(t.user_attrs.get("seeds", []))), f"{t.user_attrs.get('wall_s', 0):.0f}"])
    title = "Pareto front" if len(metrics) > 1 else "best configurations"
    lines += [f"{title}:", text_table(head, rows, indent="  ")]
    return "\n".join(lines)
