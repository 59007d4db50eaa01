"""Run (or continue) the study of a validated ``SweepSpec``: the one runner behind ``seqbench sweep``,
``compare`` and the claims of ``verify``.

The coordinator opens the study (creating it and enqueuing the grid, or checking that a study it
continues was started from a comparable spec), says where it stands, runs the trials in this process
(one worker) or in worker processes, and reads the trials back once. What a study stores is the
contract in ``bench/commands/sweep.py``.
"""

from __future__ import annotations

import itertools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
import pandas as pd
from optuna.trial import FrozenTrial

from seqbench.bench.config import RunConfig
from seqbench.bench.core.artifacts import check_writable
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.text import redact
from seqbench.sweeps.progress import done_text, failed_trials, summary
from seqbench.sweeps.spec import SweepSpec, trial_config
from seqbench.sweeps.storage import check_scheme, describe, journal_space
from seqbench.sweeps.study import Job, failed_outside, open_study, optuna_quiet, requeue_failed, space_needed
from seqbench.sweeps.table import Objective, objectives_of, runs_root, trials_table


@dataclass(frozen=True)
class SweepResult:
    """What a sweep returns: the study it ran (or continued) and where its files are."""

    study: str  # the study name (what ``seqbench report NAME`` takes)
    status: int  # 0 when every worker finished cleanly and no trial stands failed outside the experiment
    out_dir: Path  # runs/ and the default journal live here
    storage: str | None  # as given (None: the journal under out_dir)
    trials: list[FrozenTrial]  # the study's trials after the sweep
    spec: SweepSpec  # the resolved spec it ran
    objectives: list[Objective]  # as the study stores them
    runs: Path  # where the study's run folders are (``sweeps.table.runs_root``)

    def table(self) -> pd.DataFrame:
        """The study's run table (``sweeps.table``) from the trials the sweep read back: no reopening."""
        return trials_table(self.trials, self.objectives, self.runs)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def spec_threads(spec: SweepSpec) -> int:
    """The largest train.threads any run of the spec asks for (1, the RunConfig default, if none)."""
    asked = [(spec.base.get("train") or {}).get("threads") or 1]
    for block in [*spec.per_model.values(), *spec.per_task.values()]:
        asked.append(block.get("train.threads") or 1)
    p = spec.parameters.get("train.threads")
    if p is not None:
        asked += [v for v in (getattr(p, "values", None) or []) if isinstance(v, int)] or [getattr(p, "max", 1) or 1]
    return max(int(a) for a in asked)


def sweep_argv(
    source: str,
    overrides: Sequence[str] = (),
    *,
    trials: int | None = None,
    workers: int = 1,
    storage: str | None = None,
    study: str | None = None,
    out_dir: str = "outputs",
) -> list[str]:
    """The ``seqbench sweep`` arguments (after ``seqbench sweep``) that run this study: what a run records
    as its command line when its caller gives none."""
    return [
        source,
        *overrides,
        *(["--trials", str(trials)] if trials else []),
        "--workers",
        str(workers),
        *(["--storage", storage] if storage else []),
        *(["--study", study] if study else []),
        "--out-dir",
        out_dir,
    ]


def check_counts(workers: int, heartbeat: float) -> None:
    if workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {workers})")
    if heartbeat <= 0:
        raise UserError(f"--heartbeat: must be > 0 seconds (got {heartbeat})")


_BUILD_CAP = 4096  # search-space corners built jointly; beyond this, one parameter at a time


def build_points(spec: SweepSpec) -> list[dict[str, Any]]:
    """The points whose configurations cover every task and model ``spec``'s trials can build: each grid
    point (for grid); otherwise each corner of the task and model parameters (the others at their first
    corner: they change no build), jointly up to ``_BUILD_CAP`` of them, else one parameter at a time."""
    if spec.method == "grid":
        return spec.grid()
    corners = {k: p.corners() for k, p in spec.parameters.items()}
    built = [k for k in corners if k.split(".")[0] in ("task", "model")]
    first = {k: v[0] for k, v in corners.items()}
    if math.prod(len(corners[k]) for k in built) <= _BUILD_CAP:
        return [{**first, **dict(zip(built, c))} for c in itertools.product(*(corners[k] for k in built))]
    return [{**first, k: v} for k in built for v in corners[k]]


def spec_configs(spec: SweepSpec, where: str = "") -> list[tuple[str, RunConfig]]:
    """Every configuration to build before the study of ``spec`` trains (:func:`build_points`), as (its name
    in an error, its RunConfig), at the first seed (the other seeds build the same task and model).
    A configuration is named by ``where`` (a claim, a probe x model: what the user named), else by its point."""
    return [
        (where or " ".join(f"{k}={v}" for k, v in point.items()), trial_config(spec, point, spec.seeds[0], {}))
        for point in build_points(spec)
    ]


def preflight_specs(specs: Sequence[tuple[str, SweepSpec]]) -> None:
    """Build every configuration the studies of ``specs`` (pairs of what names a spec in an error, e.g.
    ``claim NAME``, and the spec) will train, once per distinct task and model, before any study opens or
    any file is written: UserError, one line per problem (``bench.training.preflight``)."""
    from seqbench.bench.training.preflight import preflight  # torch: `sweep --print-config/--help` stay light

    preflight([c for where, spec in specs for c in spec_configs(spec, where)])


def run_sweep(
    spec: SweepSpec,
    *,
    study: str,
    source: str,
    out_dir: str,
    argv: Sequence[str],
    workers: int = 1,
    devices: list[int] | None = None,
    storage: str | None = None,
    heartbeat: float = 10.0,
    quiet_summary: bool = False,
    retry_failed: bool = False,
) -> SweepResult:
    """Run (or continue) study ``study`` of ``spec`` (read from ``source``, a path recorded as provenance)
    with ``workers`` workers; ``argv`` (after ``seqbench sweep``) is the command line the runs record, storage
    passwords redacted. Prints a line per trial started and finished and, unless ``quiet_summary``, the
    best-configurations table. ``retry_failed``: queue again the trials that failed outside the experiment."""
    check_counts(workers, heartbeat)
    preflight_specs([("", spec)])  # before the study and the out-dir: a refused config trains nothing
    # here, not at the top: `sweep --print-config/--help` import no torch; the workers are forked after
    # this process has imported torch and Lightning, so none of them pays for that import again
    from seqbench.sweeps import processes, worker

    placed = processes.placement(workers, devices, processes.visible_cuda_devices())
    optuna_quiet()
    # Each worker keeps train.threads (default 1: small recurrent models ran 2.7-12x slower with 2
    # intra-op threads on 2 busy cores, and 8x slower in a 1-worker sweep); a spec that asks for more
    # is capped so K workers never oversubscribe the machine.
    threads = max(1, cores() // workers) if spec_threads(spec) > cores() // workers else None
    job = Job(
        spec=spec.to_dict(),
        spec_path=source,
        study=study,
        storage=storage,
        out_dir=out_dir,
        threads=threads,
        heartbeat=heartbeat,
        argv=[redact(a) for a in ["seqbench", "sweep", *argv]],
    )
    check_scheme(storage)
    check_writable(Path(out_dir))  # one line now, not a failed trial per configuration later
    opened: dict[str, optuna.Study] = {}
    with journal_space(storage, out_dir, lambda: space_needed(opened.get("study"), spec, out_dir)):
        st = opened["study"] = open_study(job, spec, coordinator=True, longest_first=workers > 1)
        _announce(job, spec, st, workers, placed, retry_failed)
        if workers == 1 and devices is None:
            worker.worker(job, st, spec=spec)
            status = 0
        else:  # --devices with one worker: a process of its own, so the device choice is exact
            status = processes.run_workers(job, workers, placed)
        final = st.get_trials(deepcopy=False)  # read only: reopening would append to the journal
    if status == 0 and any(failed_outside(t) for t in failed_trials(final)):
        status = 1  # not done: a full disk, memory, a kill; the summary says --retry-failed runs them again
    if not quiet_summary:
        print(summary(final, spec))
    return SweepResult(
        job.study, status, Path(out_dir), storage, final, spec, objectives_of(st), runs_root(st, out_dir)
    )


def _announce(
    job: Job, spec: SweepSpec, st: optuna.Study, workers: int, placed: list[str | None], retry_failed: bool
) -> None:
    """The sweep's opening lines: what --retry-failed queued, the study and where it stands, the question."""
    if retry_failed:
        again = requeue_failed(st)
        print(
            f"--retry-failed: {len(again)} trial(s) that failed outside the experiment queued again"
            + (f" ({', '.join(str(t.number) for t in again)})" if again else ""),
            flush=True,
        )
    left = spec.left_out()
    print(
        f"study {job.study}: {spec.method}, {spec.budget()} configurations"
        + (f" ({left} left out by exclude:)" if left else "")
        + f" x {len(spec.seeds)} seed(s), "
        f"{done_text(st.get_trials(deepcopy=False))}; {workers} worker(s)"
        + (f", {job.threads} torch thread(s) each" if job.threads else "")
        + f"; storage {describe(job.storage, job.out_dir)}",
        flush=True,
    )
    if spec.question:
        print(f"question: {spec.question}", flush=True)
    if placed[0] is not None:
        print("CUDA_VISIBLE_DEVICES per worker: " + ", ".join(str(p) for p in placed), flush=True)
