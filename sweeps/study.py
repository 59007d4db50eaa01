"""The study: create it or continue it, enqueue the grid, count what is done.

A study is created once: the creator stores the spec as study user attrs (the report contract in
``bench/commands/sweep.py``) and, for grid, enqueues every grid point exactly once; anyone who
continues it must bring a spec that differs at most in budget and prose (``comparable``).
"""

from __future__ import annotations

import json
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import optuna
from optuna.exceptions import DuplicatedStudyError
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.core.artifacts import StudyAttrs, check_study_attrs, runs_path
from seqbench.bench.core.disk import tree_size
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.provenance import git_sha, package_version
from seqbench.sweeps.liveness import requeue, superseded, trial_params
from seqbench.sweeps.optuna_adapter import set_study_flag, study_flag
from seqbench.sweeps.spec import SweepSpec, trial_config
from seqbench.sweeps.storage import open_storage

READY_ATTR = "seqbench:ready"  # study flag: the creator has stored the spec and enqueued the grid
GRACE_BEATS = 6  # a RUNNING trial whose heartbeat is older than this many beats is failed and retried


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


def optuna_quiet() -> None:
    optuna.logging.set_verbosity(optuna.logging.WARNING)


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
        return optuna.pruners.HyperbandPruner(min_resource=max(1, p.warmup_steps), reduction_factor=p.reduction_factor)
    return optuna.pruners.NopPruner()


def study_attrs(job: Job, spec: SweepSpec) -> StudyAttrs:
    return check_study_attrs(
        {
            "spec": spec.to_dict(),
            "spec_path": job.spec_path,
            "question": spec.question,
            "metrics": [{"name": m.name, "goal": m.goal} for m in spec.metrics()],
            "out_dir": job.out_dir,
            "seqbench_version": package_version(),
            "git_sha": git_sha(),
        }
    )


def comparable(spec: dict[str, Any]) -> dict[str, Any]:
    """What must match to continue a study (the budget and the prose may change, and so may the order of
    a parameter's values: ``model=gru,lstm`` measures what ``model=lstm,gru`` does)."""
    out = {k: v for k, v in spec.items() if k not in ("trials", "timeout", "question")}
    params = out.get("parameters")
    if isinstance(params, dict):
        out["parameters"] = {
            k: {**p, "values": sorted(p["values"], key=_canon)}
            if isinstance(p, dict) and isinstance(p.get("values"), list)
            else p
            for k, p in params.items()
        }
    return out


def _canon(v: Any) -> str:
    return json.dumps(v, sort_keys=True, default=str)


class SpecChanged(UserError):
    """The study exists and was started from a spec that differs in more than budget and prose."""


def open_study(
    job: Job, spec: SweepSpec, *, coordinator: bool = True, wait_s: float = 120.0, longest_first: bool = False
) -> optuna.Study:
    """Create the study or continue it; the creator stores the spec and enqueues the grid (``longest_first``:
    :func:`queue_order`)."""
    storage = open_storage(job.storage, job.out_dir)
    directions = [StudyDirection.MAXIMIZE if m.goal == "maximize" else StudyDirection.MINIMIZE for m in spec.metrics()]
    try:
        storage.create_new_study(directions, job.study)
        created = True
    except DuplicatedStudyError:
        created = False
    study = optuna.load_study(
        study_name=job.study, storage=storage, sampler=make_sampler(spec), pruner=make_pruner(spec)
    )
    if created:
        for k, v in study_attrs(job, spec).items():
            study.set_user_attr(k, v)
    else:
        if list(study.directions) != directions:
            raise UserError(f"--study: {job.study!r} exists with other objectives; choose another --study NAME")
        deadline = time.time() + wait_s  # another process is creating it right now
        while not study_flag(study, READY_ATTR) and time.time() < deadline:
            time.sleep(0.5)
        stored = study.user_attrs.get("spec")
        if stored is not None and comparable(stored) != comparable(spec.to_dict()):
            diff = sorted(
                k
                for k in set(stored) | set(spec.to_dict())
                if comparable(stored).get(k) != comparable(spec.to_dict()).get(k)
            )
            raise SpecChanged(
                f"--study: {job.study!r} was started from a different spec ({', '.join(diff)} "
                "differ); pass --study NEWNAME for a new study"
            )
        if stored is None:  # its creator died before storing anything
            for k, v in study_attrs(job, spec).items():
                study.set_user_attr(k, v)
    if created or coordinator:
        enqueue_missing_grid(study, spec, longest_first=longest_first)
    if created:
        set_study_flag(study, READY_ATTR, True)
    return study


def grid_key(params: dict[str, Any]) -> str:
    """One grid point as a comparable string (parameter order does not matter)."""
    return json.dumps(params, sort_keys=True, default=str)


def counts_as_done(t: FrozenTrial, gone: set[int]) -> bool:
    """Finished for good: COMPLETE, PRUNED, or FAIL that is not being retried (``gone``: see
    ``superseded``)."""
    return t.state in (TrialState.COMPLETE, TrialState.PRUNED) or (t.state == TrialState.FAIL and t.number not in gone)


def n_done(trials: list[FrozenTrial]) -> int:
    gone = superseded(trials)
    return sum(1 for t in trials if counts_as_done(t, gone))


def space_needed(study: optuna.Study | None, spec: SweepSpec, out_dir: str) -> float:
    """Bytes the rest of the study is expected to write: its runs left times the median size of its
    finished run folders (a few sampled); 0 when nothing finished yet (or the study cannot be read)."""
    try:
        trials = study.get_trials(deepcopy=False) if study is not None else []
    except Exception:  # noqa: BLE001 - an estimate for an error message; never a second error
        return 0.0
    done = [r for t in trials if t.state == TrialState.COMPLETE for r in t.user_attrs.get("run_ids", [])]
    sizes = [tree_size(runs_path(out_dir) / r) for r in done[-9:]]
    left = max(0, spec.budget() - n_done(trials)) * len(spec.seeds)
    return left * statistics.median(sizes) if sizes else 0.0


def enqueue_missing_grid(study: optuna.Study, spec: SweepSpec, *, longest_first: bool = False) -> int:
    """Enqueue each grid point that has no trial (done, running or waiting); returns how many. Workers take
    them in this order: :func:`queue_order`."""
    if spec.method != "grid":
        return 0
    trials = study.get_trials(deepcopy=False)
    gone = superseded(trials)
    have = {
        grid_key(trial_params(t))
        for t in trials
        if counts_as_done(t, gone) or t.state in (TrialState.RUNNING, TrialState.WAITING)
    }
    n = 0
    for point in queue_order(spec, longest_first=longest_first):
        if grid_key(point) not in have:
            study.enqueue_trial(point)
            n += 1
    return n


def queue_order(spec: SweepSpec, *, longest_first: bool = True) -> list[dict[str, Any]]:
    """The grid points in the order workers take them. ``longest_first`` (a command that starts several
    workers): the longest trainings first (``train.max_steps``; stable, the grid's order among equals), so that
    the study does not end on a long configuration running alone while the other workers sit idle (longest
    processing time first: a trial trains its seeds one after another, so one long configuration is the tail).
    Otherwise, and always with a ladder (its easier rungs must run first), the grid's order: one worker
    takes as long in any order."""
    points = spec.grid()
    if spec.ladder is not None or not longest_first:
        return points
    return sorted(points, key=lambda p: -trial_config(spec, p, spec.seeds[0], {}).train.max_steps)


# Failures from outside the experiment, as ``sweeps.trial.error_line`` words them: no space left (or
# quota, or a file size limit), out of memory (Python, the CPU allocator, CUDA), a killed process.
# Matched on the text, so studies failed before this existed can be retried too.
_OUTSIDE = re.compile(
    r"Errno 28\]|No space left|Errno 122\]|quota exceeded|Errno 27\]|File too large|"
    r"MemoryError|OutOfMemoryError|"
    r"out of memory|can't allocate memory|Cannot allocate memory|killed by signal|\bKilled\b",
    re.IGNORECASE,
)


def failed_outside(t: FrozenTrial) -> bool:
    """A FAIL caused by the machine, not by the configuration: a diverged seed is a result and never
    counts, whatever else went wrong in the trial."""
    if t.state != TrialState.FAIL or t.user_attrs.get("n_diverged"):
        return False
    reason = str(t.user_attrs.get("fail_reason") or "")
    return "diverged" not in reason and bool(_OUTSIDE.search(reason))


def requeue_failed(study: optuna.Study) -> list[FrozenTrial]:
    """``--retry-failed``: queue again the configuration of every FAIL trial that ``failed_outside``
    and is not being retried already; their runs continue from their checkpoints. Returns them."""
    trials = study.get_trials(deepcopy=False)
    gone = superseded(trials)
    again = [t for t in trials if t.number not in gone and failed_outside(t)]
    for t in again:
        requeue(study, t)
    return again
