"""The results.json of a finished fit: metrics (final, best, at each tested length), status, timing,
throughput and model FLOP/s, where it trained, provenance (``assemble_results``, called by
``bench.training.train.run_in_process``). Keys that could not be measured are left out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from seqbench.bench.config import RunConfig
from seqbench.bench.core import artifacts
from seqbench.bench.core.artifacts import Results, Status
from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.lengths import LengthCurve, length_curve
from seqbench.bench.training.callbacks import TrainClock
from seqbench.bench.training.flops import flops_per_token, peak_flops
from seqbench.bench.training.module import SeqModule
from seqbench.bench.training.tracking import RunTracker
from seqbench.tasks.base import Task


@dataclass
class Fitted:
    """What ``bench.training.train``'s fit leaves for evaluation and the results file."""

    status: Status
    reason: str | None
    steps: int
    clock: TrainClock
    facts: Results = field(default_factory=Results)  # where it trained (DeviceFacts): device, precision, world_size ...


def best_of(cfg: RunConfig, rows: Sequence[artifacts.MetricsRow]) -> dict[str, float]:
    """Best value of each validation metric over the run's rows (NaN skipped)."""
    best: dict[str, float] = {}
    for row in rows:
        for k, v in row.items():
            if not k.startswith("val/") or v != v:
                continue
            best[k] = cfg.task.facts.goal(k).better(best.get(k, v), v)
    return best


def throughput(cfg: RunConfig, steps: int, world_size: int, train_s: float) -> Results:
    """Samples/s and tokens/s over training time (validation excluded, summed over resumed processes);
    a training token is one input position: batch_size * the mean training positions per step and process."""
    if train_s <= 0 or steps <= 0:
        return {}
    samples = steps * cfg.train.batch_size * world_size
    return {
        "samples_per_s": round(samples / train_s, 2),
        "tokens_per_s": round(samples * cfg.task.mean_train_positions() / train_s, 1),
    }


def steady_throughput(cfg: RunConfig, spec: TaskSpec, steady: tuple[int, float] | None, facts: Results) -> Results:
    """tokens/s (and MFU where the GPU's peak is known) after the process's first steps (``TrainClock.steady``):
    the figure to compare a compiled model with an eager one; left out for runs too short to have one."""
    if steady is None:
        return {}
    speed = throughput(cfg, steady[0], int(facts.get("world_size", 1)), steady[1])
    out: Results = {"steady_tokens_per_s": speed["tokens_per_s"]}
    mfu = _utilisation(cfg, spec, speed["tokens_per_s"], facts).get("mfu")
    if mfu is not None:
        out["steady_mfu"] = mfu
    return out


def _utilisation(cfg: RunConfig, spec: TaskSpec, tokens_per_s: float | None, facts: Results) -> Results:
    """Achieved model FLOP/s (analytic forward+backward FLOPs per token x tokens/s) and, on a GPU,
    MFU = achieved / the device's peak for the precision. Keys that cannot be measured are left out.
    """
    per_token = flops_per_token(cfg, spec)
    if per_token is None or not tokens_per_s:
        return {}
    achieved = per_token * tokens_per_s
    out: Results = {"model_flops_per_token": per_token, "model_flops_per_s": achieved}
    if str(facts.get("device", "")).startswith("cuda") and facts.get("device_name"):
        peak = peak_flops(facts["device_name"], facts.get("precision", cfg.train.precision))
        if peak:
            out["mfu"] = achieved / (peak * facts.get("world_size", 1))
    return out


def assemble_results(
    cfg: RunConfig, tracker: RunTracker, task: Task, module: SeqModule, fitted: Fitted, test: dict[str, float]
) -> Results:
    """The results.json dict: metrics, status, timing, where it trained, provenance."""
    rows = tracker.rows
    final = {k: v for k, v in (rows[-1] if rows else {}).items() if k.startswith("val/")}
    final.update(test)
    train_s = fitted.clock.train_s
    final["time/train_s"] = train_s
    baseline = {f"val/{k}": v for k, v in task.baseline().items()}
    facts: Results = fitted.facts or {"device": str(module.device)}  # training never started: where it would have
    speed = throughput(cfg, fitted.steps, int(facts.get("world_size", 1)), train_s)
    extras = task.final_report(module.net, module.device) if fitted.status is Status.COMPLETED else {}
    curve = lengths_of(cfg, task, final)
    return {
        **tracker.provenance(),
        "status": fitted.status,
        "reason": fitted.reason,
        "task": cfg.task.name,
        "model": cfg.model.name,
        "final": final,
        "best": best_of(cfg, rows),
        "baseline": baseline,
        "solved": bool(task.solved(final, "val")) if final else False,
        "primary_metric": f"val/{cfg.task.facts.primary}",
        "primary_goal": cfg.task.facts.primary_goal.value,
        "steps": fitted.steps,
        "wall_time_s": round(fitted.clock.wall_s, 3),
        "train_time_s": round(train_s, 3),
        **speed,
        **_utilisation(cfg, task.spec, speed.get("tokens_per_s"), facts),
        **steady_throughput(cfg, task.spec, fitted.clock.steady(fitted.steps), facts),
        "n_params": n_params(module),
        **facts,
        "extras": extras,
        **({"length_generalisation": curve} if curve is not None else {}),
        "config": cfg.to_dict(),
    }


def lengths_of(cfg: RunConfig, task: Task, final: dict[str, float]) -> LengthCurve | None:
    """The run's length-generalisation curve (``bench.core.lengths``) when it was tested at ``eval.lengths``."""
    if not cfg.eval.lengths:
        return None
    trained = cfg.task.train_lengths() or (cfg.task.seq_len(), cfg.task.seq_len())
    return length_curve(final, cfg.task.facts.primary, trained, cfg.eval.lengths, task.solved)


def n_params(module: SeqModule) -> int:
    return sum(p.numel() for p in module.net.parameters())
