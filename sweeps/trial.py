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
from typing import Any

import optuna
from optuna.exceptions import UpdateFinishedTrialError
from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.artifacts import TrialAttrs, check_trial_attrs, wandb_group
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.text import redact
from seqbench.bench.training import train  # train.train_run looked up per call (tests replace it)
from seqbench.bench.training.tracking import RunTracker
from seqbench.sweeps.liveness import Heartbeat, requeue, this_worker
from seqbench.sweeps.optuna_adapter import frozen, set_trial_flag
from seqbench.sweeps.pruning import PruningCallback
from seqbench.sweeps.spec import SweepSpec, trial_config
from seqbench.sweeps.storage import journal_path
from seqbench.sweeps.study import Job


def suggest(trial: optuna.Trial, spec: SweepSpec) -> dict[str, Any]:
    params = {}
    for k, p in spec.parameters.items():
        if p.values is not None:
            params[k] = trial.suggest_categorical(k, p.values)
        elif p.distribution == "int_uniform":
            params[k] = trial.suggest_int(k, int(p.min), int(p.max))  # type: ignore[arg-type]
        else:
            params[k] = trial.suggest_float(k, p.min, p.max, log=p.distribution == "log_uniform")
    return params


def _tags(spec: SweepSpec, trial: optuna.Trial, params: dict[str, Any]) -> list[str]:
    base = list((spec.base.get("tracking") or {}).get("tags") or [])
    return [*base, f"trial-{trial.number}", *(f"{k}={v}"[:64] for k, v in params.items())]


def error_line(e: BaseException) -> str:
    """An exception as the one-line reason a trial records: its type, then its words (300 characters at most)."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:300] if text else type(e).__name__


def run_trial(study: optuna.Study, trial: optuna.Trial, spec: SweepSpec, job: Job) -> FrozenTrial | None:
    """All seed replicates of one configuration; tells the study COMPLETE, PRUNED or FAIL."""
    t0 = time.perf_counter()
    metrics = spec.metrics()
    per_seed: list[Any] = []
    run_ids: list[str] = []
    n_div, reasons = 0, []
    state, values, params = TrialState.COMPLETE, None, {}
    set_trial_flag(study, trial, "worker", f"{socket.gethostname()}:{os.getpid()}")
    _set(trial, {"worker": this_worker()})  # a re-run on this machine knows at once when it is gone
    hb = Heartbeat(study, trial, job.heartbeat)
    with hb:
        try:
            params = suggest(trial, spec)
            _set(trial, {"seeds": list(spec.seeds)})
            group = wandb_group(job.study, str(journal_path(job.storage, job.out_dir) or redact(job.storage)))
            extra: dict[str, Any] = {"out_dir": job.out_dir, "tracking.group": group,
                                     "tracking.tags": _tags(spec, trial, params)}
            if job.threads:
                extra["train.threads"] = job.threads
            resume_ids = trial.user_attrs.get("resume_run_ids", [])  # a retry continues its runs
            for i, seed in enumerate(spec.seeds):
                again = {"run_id": resume_ids[i], "resume": True} if i < len(resume_ids) else {}
                cfg = trial_config(spec, params, seed, {**extra, **again})
                if i == 0:
                    _set(trial, {"config_hash": cfg.config_hash()})
                tracker = RunTracker(cfg, job.argv or None)
                run_ids.append(tracker.run_id)
                _set(trial, {"run_ids": run_ids})
                cbs = []
                # every single-objective trial reports its curve (live in optuna-dashboard); the pruner,
                # NopPruner for pruner: none, decides; Optuna has no intermediate values for several objectives
                if len(metrics) == 1:
                    watch = "val/" + metrics[0].name.split("/", 1)[1]
                    cbs.append(PruningCallback(trial, watch, step_offset=i * cfg.train.max_steps))
                r = train.train_run(cfg, argv=job.argv or None, callbacks=cbs, progress=False, tracker=tracker)
                if r["status"] == "diverged":
                    n_div += 1
                    reasons.append(f"seed {seed} diverged: {r['reason']}")
                    per_seed.append(None)
                    continue
                per_seed.append(_objective(r, metrics))
                if r["status"] == "pruned":
                    state = TrialState.PRUNED
                    reasons.append(r["reason"])
                    break
            if n_div:
                state = TrialState.FAIL
                reasons.insert(0, f"{n_div}/{len(spec.seeds)} seeds diverged")
        except KeyboardInterrupt:
            _set(trial, {"fail_reason": "interrupted by the user; retried", "retried": True,
                         "wall_s": time.perf_counter() - t0, "run_ids": run_ids})
            _tell(study, trial, TrialState.FAIL)
            requeue(study, frozen(study, trial))
            raise
        except Exception as e:  # noqa: BLE001 - one bad trial never stops the study
            state = TrialState.FAIL
            reasons.append(error_line(e))
    ok = [v for v in per_seed if v is not None]
    attrs: TrialAttrs = {"per_seed": per_seed if len(metrics) > 1 else [None if v is None else v[0]
                                                                             for v in per_seed],
                             "n_diverged": n_div, "wall_s": round(time.perf_counter() - t0, 3),
                             "run_ids": run_ids}
    if ok:
        cols = list(zip(*ok))
        mean = [statistics.fmean(c) for c in cols]
        std = [statistics.stdev(c) if len(c) > 1 else 0.0 for c in cols]
        attrs["mean"], attrs["std"] = (mean, std) if len(metrics) > 1 else (mean[0], std[0])
        values = mean
    if state == TrialState.COMPLETE and not ok:
        state, reasons = TrialState.FAIL, reasons or ["no replicate produced a value"]
    if state == TrialState.COMPLETE and values and not all(math.isfinite(v) for v in values):
        state = TrialState.FAIL
        reasons.append(f"objective is not finite: {values}")
    if state != TrialState.COMPLETE:
        attrs["fail_reason" if state == TrialState.FAIL else "prune_reason"] = "; ".join(reasons)
    if hb.lost:
        print(f"trial {trial.number:>4} dropped: another worker failed it as stale; its retry redoes it",
              flush=True)
        return None
    _set(trial, attrs)
    return _tell(study, trial, state, values if state == TrialState.COMPLETE else None)


def _objective(results: dict[str, Any], metrics) -> list[float]:
    out = []
    for m in metrics:
        if m.name not in results["final"]:
            raise UserError(f"metric.name: {m.name} is missing from the run's results (status "
                            f"{results['status']}); keys: {', '.join(sorted(results['final']))}")
        out.append(float(results["final"][m.name]))
    return out


def _set(trial: optuna.Trial, attrs: TrialAttrs) -> None:
    for k, v in check_trial_attrs(attrs).items():
        try:
            trial.set_user_attr(k, v)
        except UpdateFinishedTrialError:
            return


def _tell(study: optuna.Study, trial: optuna.Trial, state: TrialState, values: list[float] | None = None
          ) -> FrozenTrial | None:
    try:
        return study.tell(trial, values, state=state if values is None else None)
    except UpdateFinishedTrialError:
        return None
