"""The Optuna runner: spec -> study -> trials, in one or many worker processes.

A study is created once (the creator stores the spec and, for grid, enqueues every grid point
exactly once); workers then pop WAITING trials (grid) or ask the sampler (tpe/random/nsga2)
until the budget is met. Finished trials are never re-run. A worker that dies mid-trial stops
stamping its heartbeat; any other worker (or the next run of the command) fails that trial
after the grace period and enqueues its configuration again (``sweeps.storage.reap_stale``).

One trial = one configuration = one ``bench.train.run`` per seed replicate. The objective is
the replicates' mean; per-seed values, spread, run ids and the reason of a failure are trial
user attrs (see the sweep/report contract in ``bench/commands/sweep.py``'s docstring).
"""
from __future__ import annotations

import json
import math
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import optuna
from optuna.exceptions import DuplicatedStudyError, UpdateFinishedTrialError
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.artifacts import StudyAttrs, TrialAttrs, check_study_attrs, check_trial_attrs, wandb_group
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.provenance import git_sha, package_version
from seqbench.sweeps.progress import Progress, start_line, trial_line
from seqbench.sweeps.pruning import PruningCallback
from seqbench.sweeps.spec import SweepSpec, parse_spec, trial_config
from seqbench.sweeps.storage import Heartbeat, journal_path, open_storage, reap_stale, redact, requeue, trial_params

READY_ATTR = "seqbench:ready"
JOB_ENV = "SEQBENCH_SWEEP_JOB"  # how run_workers hands a Job to its worker processes


@dataclass
class Job:
    """Everything a worker needs (JSON-able: it travels to worker processes)."""

    spec: dict[str, Any]
    spec_path: str
    study: str
    storage: str | None
    out_dir: str
    threads: int | None = None  # train.threads for every run; None: the spec's own
    heartbeat: float = 10.0  # seconds between stamps; stale after GRACE_BEATS of them
    argv: list[str] = field(default_factory=list)

    @property
    def grace(self) -> float:
        return GRACE_BEATS * self.heartbeat


GRACE_BEATS = 6


def optuna_quiet() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


# -- the study --------------------------------------------------------------------------------

def make_sampler(spec: SweepSpec) -> optuna.samplers.BaseSampler:
    if spec.method == "tpe":
        return optuna.samplers.TPESampler(multivariate=True)
    if spec.method == "nsga2":
        return optuna.samplers.NSGAIISampler()
    return optuna.samplers.RandomSampler()  # grid points are enqueued: nothing is sampled


def make_pruner(spec: SweepSpec) -> optuna.pruners.BasePruner:
    p = spec.pruner
    if p.name == "median":
        return optuna.pruners.MedianPruner(n_startup_trials=p.startup_trials, n_warmup_steps=p.warmup_steps)
    if p.name == "hyperband":
        return optuna.pruners.HyperbandPruner(min_resource=max(1, p.warmup_steps),
                                              reduction_factor=p.reduction_factor)
    return optuna.pruners.NopPruner()


def study_attrs(job: Job, spec: SweepSpec) -> StudyAttrs:
    return check_study_attrs({
        "spec": spec.to_dict(), "spec_path": job.spec_path, "question": spec.question,
        "metrics": [{"name": m.name, "goal": m.goal} for m in spec.metrics()],
        "out_dir": job.out_dir, "seqbench_version": package_version(), "git_sha": git_sha()})


def comparable(spec: dict[str, Any]) -> dict[str, Any]:
    """What must match to continue a study (the budget and the prose may change)."""
    return {k: v for k, v in spec.items() if k not in ("trials", "timeout", "question")}


def open_study(job: Job, spec: SweepSpec, *, coordinator: bool = True, wait_s: float = 120.0) -> optuna.Study:
    """Create the study or continue it; the creator stores the spec and enqueues the grid."""
    storage = open_storage(job.storage, job.out_dir)
    directions = [StudyDirection.MAXIMIZE if m.goal == "maximize" else StudyDirection.MINIMIZE
                  for m in spec.metrics()]
    try:
        storage.create_new_study(directions, job.study)
        created = True
    except DuplicatedStudyError:
        created = False
    study = optuna.load_study(study_name=job.study, storage=storage, sampler=make_sampler(spec),
                              pruner=make_pruner(spec))
    if created:
        for k, v in study_attrs(job, spec).items():
            study.set_user_attr(k, v)
    else:
        if list(study.directions) != directions:
            raise UserError(f"--study: {job.study!r} exists with other objectives; choose another --study NAME")
        deadline = time.time() + wait_s  # another process is creating it right now
        while not storage.get_study_system_attrs(study._study_id).get(READY_ATTR) and time.time() < deadline:
            time.sleep(0.5)
        stored = study.user_attrs.get("spec")
        if stored is not None and comparable(stored) != comparable(spec.to_dict()):
            diff = sorted(k for k in set(stored) | set(spec.to_dict())
                          if comparable(stored).get(k) != comparable(spec.to_dict()).get(k))
            raise UserError(f"--study: {job.study!r} was started from a different spec ({', '.join(diff)} "
                            "differ); pass --study NEWNAME for a new study")
        if stored is None:  # its creator died before storing anything
            for k, v in study_attrs(job, spec).items():
                study.set_user_attr(k, v)
    if created or coordinator:
        enqueue_missing_grid(study, spec)
    if created:
        storage.set_study_system_attr(study._study_id, READY_ATTR, True)
    return study


def _key(params: dict[str, Any]) -> str:
    return json.dumps(params, sort_keys=True, default=str)


def counts_as_done(t: FrozenTrial) -> bool:
    """Finished for good: COMPLETE, PRUNED, or FAIL that is not being retried."""
    return t.state in (TrialState.COMPLETE, TrialState.PRUNED) or (
        t.state == TrialState.FAIL and not t.user_attrs.get("retried"))


def enqueue_missing_grid(study: optuna.Study, spec: SweepSpec) -> int:
    """Enqueue each grid point that has no trial (done, running or waiting); returns how many."""
    if spec.method != "grid":
        return 0
    have = {_key(trial_params(t)) for t in study.get_trials(deepcopy=False)
            if counts_as_done(t) or t.state in (TrialState.RUNNING, TrialState.WAITING)}
    n = 0
    for point in spec.grid():
        if _key(point) not in have:
            study.enqueue_trial(point)
            n += 1
    return n


# -- a worker ---------------------------------------------------------------------------------

def _pop_waiting(study: optuna.Study) -> optuna.Trial | None:
    """Take one WAITING trial; the storage lets exactly one worker win each."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.WAITING,)):
        try:
            if study._storage.set_trial_state_values(t._trial_id, TrialState.RUNNING):
                return optuna.Trial(study, t._trial_id)
        except UpdateFinishedTrialError:
            continue
    return None


def next_trial(study: optuna.Study, spec: SweepSpec) -> optuna.Trial | None | bool:
    """A trial to run, None to wait (others still running), False when the budget is met."""
    trials = study.get_trials(deepcopy=False)
    waiting = [t for t in trials if t.state == TrialState.WAITING]
    running = [t for t in trials if t.state == TrialState.RUNNING]
    done = [t for t in trials if counts_as_done(t)]
    if spec.method == "grid":
        if waiting:
            return _pop_waiting(study)
    elif waiting or len(done) + len(running) < spec.budget():
        return study.ask()
    return None if running else False


def worker(job: Job, study: optuna.Study | None = None, *, max_trials: int | None = None,
           timeout: float | None = None) -> int:
    """Run trials until the study's budget is met; returns how many this worker finished."""
    optuna_quiet()
    spec = parse_spec(job.spec, source=job.spec_path)
    study = study or open_study(job, spec, coordinator=False)
    timeout = timeout if timeout is not None else spec.timeout
    t0, finished = time.time(), 0
    poll = max(0.2, min(2.0, job.heartbeat / 2))
    progress = Progress(spec.budget(), _n_done(study))
    while max_trials is None or finished < max_trials:
        if timeout is not None and time.time() - t0 > timeout:
            break
        reap_stale(study, job.grace, on_reaped=lambda t: print(
            f"trial {t.number:>4} FAIL     worker lost (no heartbeat for {job.grace:.0f}s); "
            "its configuration is queued again", flush=True))
        trial = next_trial(study, spec)
        if trial is False:
            break
        if trial is None:
            time.sleep(poll)
            continue
        print(start_line(trial.number, _params_or_none(trial, spec)), flush=True)
        frozen = run_trial(study, trial, spec, job)
        finished += 1
        if frozen is not None:
            print(trial_line(frozen, spec.metrics(), progress.tag(_n_done(study))), flush=True)
    return finished


def _n_done(study: optuna.Study) -> int:
    return sum(1 for t in study.get_trials(deepcopy=False) if counts_as_done(t))


def _params_or_none(trial: optuna.Trial, spec: SweepSpec) -> dict[str, Any]:
    """The trial's configuration for its start line (suggesting is idempotent: run_trial gets the same)."""
    try:
        return suggest(trial, spec)
    except Exception:  # noqa: BLE001 - run_trial reports a sampling failure as the trial's FAIL
        return {}


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


def one_line(e: BaseException) -> str:
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text}"[:300] if text else type(e).__name__


def run_trial(study: optuna.Study, trial: optuna.Trial, spec: SweepSpec, job: Job) -> FrozenTrial | None:
    """All seed replicates of one configuration; tells the study COMPLETE, PRUNED or FAIL."""
    from seqbench.bench.training.tracking import RunTracker
    from seqbench.bench.training.train import run

    t0 = time.perf_counter()
    metrics = spec.metrics()
    per_seed: list[Any] = []
    run_ids: list[str] = []
    n_div, reasons = 0, []
    state, values, params = TrialState.COMPLETE, None, {}
    study._storage.set_trial_system_attr(trial._trial_id, "worker", f"{socket.gethostname()}:{os.getpid()}")
    hb = Heartbeat(study._storage, trial._trial_id, job.heartbeat)
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
                r = run(cfg, argv=job.argv or None, callbacks=cbs, progress=False, tracker=tracker)
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
            requeue(study, study._storage.get_trial(trial._trial_id))
            raise
        except Exception as e:  # noqa: BLE001 - one bad trial never stops the study
            state = TrialState.FAIL
            reasons.append(one_line(e))
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


# -- many workers -----------------------------------------------------------------------------

CUDA_ENV = "CUDA_VISIBLE_DEVICES"


def visible_cuda_devices() -> list[str]:
    """This process's CUDA devices as ``CUDA_VISIBLE_DEVICES`` entries (entry i is ``cuda:i`` here).

    Entries of an inherited ``CUDA_VISIBLE_DEVICES`` (indices, UUIDs or MIG ids) are kept as they are,
    so a worker handed entry i sees the same device this process calls ``cuda:i``. [] without CUDA.
    """
    import torch

    n = torch.cuda.device_count()
    if not n:
        return []
    listed = os.environ.get(CUDA_ENV)
    if listed is None:
        return [str(i) for i in range(n)]
    return [d.strip() for d in listed.split(",")][:n]  # CUDA stops at the first entry it cannot use


def placement(n_workers: int, devices: list[int] | None, visible: list[str]) -> list[str | None]:
    """The ``CUDA_VISIBLE_DEVICES`` value of each worker: round-robin over ``devices`` (indices into
    ``visible``; None = all of them), so several workers share a GPU when there are more workers than
    GPUs. Without CUDA every worker gets None (the environment is left alone)."""
    if not visible:
        if devices:
            raise UserError("--devices: no CUDA device is visible here (torch.cuda.device_count() is 0); "
                            "drop --devices to run the workers on the CPU")
        return [None] * n_workers
    if devices is None:
        chosen = visible
    else:
        if not devices:
            raise UserError(f"--devices: give at least one CUDA device index, from 0..{len(visible) - 1}")
        bad = [i for i in devices if not 0 <= i < len(visible)]
        if bad:
            raise UserError(f"--devices: {bad[0]} is not a visible CUDA device; choose from 0..{len(visible) - 1}")
        twice = [i for i in dict.fromkeys(devices) if devices.count(i) > 1]
        if twice:
            raise UserError(f"--devices: {twice[0]} is listed twice; list each device once (several workers "
                            "share a device when --workers exceeds the devices)")
        chosen = [visible[i] for i in devices]
    return [chosen[i % len(chosen)] for i in range(n_workers)]


def run_workers(job: Job, n: int, devices: list[str | None] | None = None) -> int:
    """``n`` local worker processes on the study (already created by the caller); exit status.

    ``devices``: each worker's ``CUDA_VISIBLE_DEVICES`` (see ``placement``); None places the workers
    round-robin on every visible CUDA device, and on a machine without CUDA changes nothing.
    """
    # the job goes by environment, not argv: `ps` shows every user the arguments (storage password)
    # workers import the installed seqbench, like this process (no PYTHONPATH games)
    env = {**os.environ, JOB_ENV: json.dumps(asdict(job))}
    devices = devices if devices is not None else placement(n, None, visible_cuda_devices())
    if len(devices) != n:
        raise ValueError(f"run_workers: {len(devices)} device entries for {n} workers")
    envs = [env if d is None else {**env, CUDA_ENV: d} for d in devices]
    procs = [subprocess.Popen([sys.executable, "-m", "seqbench.sweeps.runner"], env=e) for e in envs]
    try:
        return max(p.wait() for p in procs)
    except KeyboardInterrupt:
        for p in procs:  # they got the same Ctrl-C: let them record their trials
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        raise


def _worker_main(payload: str) -> int:
    os.environ.pop(JOB_ENV, None)  # not inherited by anything the worker starts
    job = Job(**json.loads(payload))
    try:
        worker(job)
    except UserError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(_worker_main(sys.argv[1] if len(sys.argv) > 1 else os.environ[JOB_ENV]))
