"""One trial: one configuration, one ``bench.training.train.train_run`` per seed replicate.

The objective is the replicates' mean; per-seed values, spread, run ids and the reason of a
failure are trial user attrs (the sweep/report contract in ``bench/commands/sweep.py``). A
diverged seed fails the trial (a result: it stays); an exception fails it with its one-line
reason; Ctrl-C fails it as ``retried`` and queues its configuration again.
"""

from __future__ import annotations

import math
import os
import socket
import statistics
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.artifacts import RunResult, Status, TrialAttrs, check_trial_attrs, wandb_group
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.text import redact
from seqbench.bench.training import train  # train.train_run looked up per call (tests replace it)
from seqbench.bench.training.tracking import RunTracker
from seqbench.sweeps.ladder import failed_rung, seed_order, solved_elsewhere
from seqbench.sweeps.liveness import Heartbeat, requeue, this_worker
from seqbench.sweeps.optuna_adapter import frozen, set_trial_flag
from seqbench.sweeps.pruning import PruningCallback
from seqbench.sweeps.spec import Metric, Scalar, SweepSpec, trial_config
from seqbench.sweeps.storage import journal_path
from seqbench.sweeps.study import Job


def suggest(trial: optuna.Trial, spec: SweepSpec) -> dict[str, Scalar]:
    params: dict[str, Scalar] = {}
    for k, p in spec.parameters.items():
        if p.values is not None:
            params[k] = trial.suggest_categorical(k, p.values)
            continue
        assert p.min is not None and p.max is not None  # Param's validator: a distribution has both
        if p.distribution == "int_uniform":
            params[k] = trial.suggest_int(k, int(p.min), int(p.max))
        else:
            params[k] = trial.suggest_float(k, p.min, p.max, log=p.distribution == "log_uniform")
    return params


def _tags(spec: SweepSpec, trial: optuna.Trial, params: Mapping[str, Scalar]) -> list[str]:
    base = list((spec.base.get("tracking") or {}).get("tags") or [])
    return [*base, f"trial-{trial.number}", *(f"{k}={v}"[:64] for k, v in params.items())]


def error_line(e: BaseException) -> str:
    """An exception as the one-line reason a trial records: its type, then its words (300 characters at most)."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:300] if text else type(e).__name__


@dataclass
class Replicates:
    """What a trial's seed replicates left so far: one value per seed (None: diverged), their runs, why not."""

    per_seed: list[list[float] | None] = field(default_factory=list)
    run_ids: list[str] = field(default_factory=list)  # "" for a seed skipped by the ladder
    skipped: list[int] = field(default_factory=list)  # seeds not trained: they failed an easier rung (ladder:)
    solved_elsewhere: list[int] = field(default_factory=list)  # not trained: solved at another best_of point
    solved_seeds: list[int] = field(default_factory=list)  # trained seeds meeting the task's solved criterion
    unsolved_seeds: list[int] = field(default_factory=list)  # trained seeds that did not (diverged included)
    n_diverged: int = 0
    reasons: list[str] = field(default_factory=list)
    state: TrialState = TrialState.COMPLETE


def run_trial(study: optuna.Study, trial: optuna.Trial, spec: SweepSpec, job: Job) -> FrozenTrial | None:
    """All seed replicates of one configuration; tells the study COMPLETE, PRUNED or FAIL."""
    t0 = time.perf_counter()
    reps = Replicates()
    set_trial_flag(study, trial, "worker", f"{socket.gethostname()}:{os.getpid()}")
    _set(trial, {"worker": this_worker()})  # a re-run on this machine knows at once when it is gone
    hb = Heartbeat(study, trial, job.heartbeat)
    with hb:
        try:
            _run_seeds(study, trial, spec, job, reps)
        except KeyboardInterrupt:
            _set(
                trial,
                {
                    "fail_reason": "interrupted by the user; retried",
                    "retried": True,
                    "wall_s": time.perf_counter() - t0,
                    "run_ids": reps.run_ids,
                },
            )
            _tell(study, trial, TrialState.FAIL)
            requeue(study, frozen(study, trial))
            raise
        except Exception as e:  # noqa: BLE001 - one bad trial never stops the study
            reps.state = TrialState.FAIL
            reps.reasons.append(error_line(e))
    attrs, state, values = _outcome(reps, spec.metrics(), time.perf_counter() - t0)
    if hb.lost:
        print(f"trial {trial.number:>4} dropped: another worker failed it as stale; its retry redoes it", flush=True)
        return None
    _set(trial, attrs)
    return _tell(study, trial, state, values if state == TrialState.COMPLETE else None)


def _skip(study: optuna.Study, spec: SweepSpec, params: Mapping[str, Scalar], seed: int) -> Any | None:
    """The easier rung ``seed`` failed, when the spec has a ladder (``sweeps/ladder.py``); else None."""
    if spec.ladder is None:
        return None
    grid = {k: list(p.values or ()) for k, p in spec.parameters.items()}
    return failed_rung(study.get_trials(deepcopy=False), spec.ladder, grid, params, seed)


def _elsewhere(
    study: optuna.Study, trial: optuna.Trial, spec: SweepSpec, params: Mapping[str, Scalar], seed: int
) -> str:
    """Where ``seed`` already solved this rung at another best_of point (``ladder.skip_solved``), as
    ``optim.lr=0.003``; "" when nowhere."""
    if spec.ladder is None or not spec.ladder.skip_solved:
        return ""
    where = solved_elsewhere(study.get_trials(deepcopy=False), spec.ladder, params, seed, trial.number)
    return ", ".join(f"{k}={v}" for k, v in where.items()) if where is not None else ""


def _run_seeds(study: optuna.Study, trial: optuna.Trial, spec: SweepSpec, job: Job, reps: Replicates) -> None:
    """Train the configuration once per seed (a retry continues its runs), until a seed is pruned; a
    seed that failed an easier rung of the spec's ladder is skipped, and one that solved this rung at
    another of its best_of points is not trained (``skip_solved``; the seeds then go in ``seed_order``)."""
    metrics = spec.metrics()
    params = suggest(trial, spec)
    grid = {k: list(p.values or ()) for k, p in spec.parameters.items()}
    seeds = [spec.seeds[j] for j in seed_order(spec.ladder, grid, params, len(spec.seeds))]
    _set(trial, {"seeds": seeds})
    journal = journal_path(job.storage, job.out_dir)  # None: a database URL (never None itself)
    group = wandb_group(job.study, str(journal) if journal is not None else redact(str(job.storage)))
    extra: dict[str, Any] = {
        "out_dir": job.out_dir,
        "tracking.group": group,
        "tracking.tags": _tags(spec, trial, params),
    }
    if job.threads:
        extra["train.threads"] = job.threads
    resume_ids = trial.user_attrs.get("resume_run_ids", [])  # a retry continues its runs
    for i, seed in enumerate(seeds):
        rung = _skip(study, spec, params, seed)
        where = _elsewhere(study, trial, spec, params, seed) if rung is None else ""
        if rung is not None or where:  # not trained: the ladder already knows this seed's answer here
            reps.run_ids.append("")
            reps.per_seed.append(None)
            if rung is not None:
                reps.skipped.append(seed)
                reps.reasons.append(f"seed {seed} skipped: it failed {spec.ladder.param if spec.ladder else ''}={rung}")
            else:
                reps.solved_elsewhere.append(seed)
                reps.reasons.append(f"seed {seed} not trained: it solved this rung at {where}")
            _set(trial, _untrained(reps))
            continue
        again = {"run_id": resume_ids[i], "resume": True} if i < len(resume_ids) and resume_ids[i] else {}
        cfg = trial_config(spec, params, seed, {**extra, **again})
        if i == 0:
            _set(trial, {"config_hash": cfg.config_hash()})
        tracker = RunTracker(cfg, job.argv or None)
        reps.run_ids.append(tracker.run_id)
        _set(trial, {"run_ids": reps.run_ids})
        cbs = []
        # every single-objective trial reports its curve (live in optuna-dashboard); the pruner,
        # NopPruner for pruner: none, decides; Optuna has no intermediate values for several objectives
        if len(metrics) == 1:
            watch = "val/" + metrics[0].name.split("/", 1)[1]
            cbs.append(PruningCallback(trial, watch, step_offset=i * cfg.train.max_steps))
        r = train.train_run(cfg, argv=job.argv or None, callbacks=cbs, progress=False, tracker=tracker)
        if r.status is not Status.PRUNED:  # what a ladder reads: did this seed solve the rung
            (reps.solved_seeds if r.results.get("solved") else reps.unsolved_seeds).append(seed)
            _set(trial, {"solved_seeds": reps.solved_seeds, "unsolved_seeds": reps.unsolved_seeds})
        if r.status is Status.DIVERGED:
            reps.n_diverged += 1
            reps.reasons.append(f"seed {seed} diverged: {r.reason}")
            reps.per_seed.append(None)
            continue
        reps.per_seed.append(_objective(r, metrics))
        if r.status is Status.PRUNED:
            reps.state = TrialState.PRUNED
            reps.reasons.append(r.reason or "")
            break
    if reps.n_diverged:
        reps.state = TrialState.FAIL
        reps.reasons.insert(0, f"{reps.n_diverged}/{len(spec.seeds)} seeds diverged")


def _untrained(reps: Replicates) -> TrialAttrs:
    """The attrs that say which seeds a trial did not train so far, and why."""
    attrs: TrialAttrs = {"run_ids": reps.run_ids}
    if reps.skipped:
        attrs["skipped"] = reps.skipped
    if reps.solved_elsewhere:
        attrs["solved_elsewhere"] = reps.solved_elsewhere
    return attrs


def _outcome(
    reps: Replicates, metrics: list[Metric], wall_s: float
) -> tuple[TrialAttrs, TrialState, list[float] | None]:
    """The trial's attrs (per-seed values, mean and spread, why it failed), its state and its values."""
    state, reasons, values = reps.state, list(reps.reasons), None
    ok = [v for v in reps.per_seed if v is not None]
    attrs: TrialAttrs = {
        "per_seed": reps.per_seed if len(metrics) > 1 else [None if v is None else v[0] for v in reps.per_seed],
        "n_diverged": reps.n_diverged,
        "wall_s": round(wall_s, 3),
        "run_ids": reps.run_ids,
    }
    if ok:
        cols = list(zip(*ok))
        mean = [statistics.fmean(c) for c in cols]
        std = [statistics.stdev(c) if len(c) > 1 else 0.0 for c in cols]
        attrs["mean"], attrs["std"] = (mean, std) if len(metrics) > 1 else (mean[0], std[0])
        values = mean
    if reps.skipped:
        attrs["skipped"] = reps.skipped
    if reps.solved_elsewhere:
        attrs["solved_elsewhere"] = reps.solved_elsewhere
    untrained = len(reps.skipped) + len(reps.solved_elsewhere)
    if state == TrialState.COMPLETE and not ok and reps.per_seed and untrained == len(reps.per_seed):
        state = TrialState.PRUNED  # every seed failed an easier rung or solved this one elsewhere (ladder:)
    elif state == TrialState.COMPLETE and not ok:
        state, reasons = TrialState.FAIL, reasons or ["no replicate produced a value"]
    elif state != TrialState.PRUNED:
        reasons = [r for r in reasons if " skipped: " not in r and " not trained: " not in r]
    if state == TrialState.COMPLETE and values and not all(math.isfinite(v) for v in values):
        state = TrialState.FAIL
        reasons.append(f"objective is not finite: {values}")
    if state != TrialState.COMPLETE:
        attrs["fail_reason" if state == TrialState.FAIL else "prune_reason"] = "; ".join(reasons)
    return attrs, state, values


def _objective(run: RunResult, metrics: list[Metric]) -> list[float]:
    out = []
    for m in metrics:
        if m.name not in run.final:
            raise UserError(
                f"metric.name: {m.name} is missing from the run's results (status "
                f"{run.status}); keys: {', '.join(sorted(run.final))}"
            )
        out.append(float(run.final[m.name]))
    return out


def _set(trial: optuna.Trial, attrs: TrialAttrs) -> None:
    for k, v in check_trial_attrs(attrs).items():
        try:
            trial.set_user_attr(k, v)
        except UpdateFinishedTrialError:
            return


def _tell(
    study: optuna.Study, trial: optuna.Trial, state: TrialState, values: list[float] | None = None
) -> FrozenTrial | None:
    try:
        return study.tell(trial, values, state=state if values is None else None)
    except UpdateFinishedTrialError:
        return None
