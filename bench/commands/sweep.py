"""``seqbench sweep SPEC [--trials N] [--workers K] [--storage URL] [--study NAME]``.

Re-running the same command continues the study: finished trials are kept, a grid is never
duplicated, trials of dead workers are retried, and the command ends when the budget is met.
Prints a line when a trial starts and one when it ends (``[done/total, ETA]``), a table of the
best configurations, and the ``seqbench report`` command that finds the study
(``sweeps/progress.py``).

What a study stores (read by ``reports/``; typed as ``StudyAttrs``/``TrialAttrs`` in ``bench/core/artifacts.py``):
study user attrs ``spec``, ``spec_path``, ``question``, ``metrics``, ``out_dir``,
``seqbench_version``, ``git_sha``; trial params = the spec's dotted keys; trial user attrs
``run_ids``, ``seeds``, ``per_seed``, ``mean``, ``std``, ``n_diverged``, ``config_hash``,
``wall_s``, ``worker`` (host, boot id, pid, process start: a re-run on that machine knows at once when it
is gone), and ``fail_reason`` on FAIL; besides, ``prune_reason`` on PRUNED, ``retried`` on a
FAIL whose configuration was queued again (dead worker, Ctrl-C), and ``retry_of`` /
``resume_run_ids`` on that retry (its runs continue the dead trial's from their checkpoints).
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import yaml

from seqbench.bench.config import notes
from seqbench.bench.core.artifacts import check_writable, runs_path
from seqbench.bench.core.errors import UserError
from seqbench.sweeps import spec_path
from seqbench.sweeps.progress import done_text, failed_trials, summary
from seqbench.sweeps.spec import resolve_spec
from seqbench.sweeps.storage import check_scheme, describe, journal_space, redact
from seqbench.sweeps.study import Job, failed_outside, open_study, optuna_quiet, requeue_failed, space_needed


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("spec", help="sweep YAML path, or the name of a shipped sweep (seqbench list), e.g. demo")
    sp.add_argument("overrides", nargs="*", help="dotted key=value applied to the spec's base in any order, "
                    "e.g. train.max_steps=200 (a changed spec needs a new --study); a key the spec sweeps "
                    "or sets per model/task is refused")
    sp.add_argument("--trials", type=int, help="budget (grid: run the first N points)")
    sp.add_argument("--workers", type=int, default=1, help="local worker processes sharing the study")
    sp.add_argument("--devices", type=parse_devices, help="CUDA device indices for the workers, e.g. 0,1 "
                    "(round-robin, several workers per device; default: every visible CUDA device)")
    sp.add_argument("--storage", help="journal file path, journal:///path, or postgresql://... / mysql://... "
                    "(default: <out_dir>/optuna.journal)")
    sp.add_argument("--study", help="study name (default: the spec file's stem)")
    sp.add_argument("--out-dir", help="where runs and the default journal go (default: the spec's "
                    "base.out_dir, else outputs)")
    sp.add_argument("--heartbeat", type=float, default=10.0, help="seconds between liveness stamps; a "
                    "trial silent for 6 of them is failed and retried")
    sp.add_argument("--retry-failed", action="store_true", help="queue again the trials that failed for a reason "
                    "outside the experiment (no space left, out of memory, killed); diverged trials stay")
    sp.add_argument("--print-config", action="store_true", help="print the resolved spec (its base with the "
                    "overrides applied, --trials included) as YAML and exit")
    sp.set_defaults(func=cmd_sweep)


def parse_devices(text: str) -> list[int]:
    """``--devices 0,1`` -> [0, 1] (indices as this process numbers its CUDA devices)."""
    try:
        return [int(d) for d in text.split(",")]
    except ValueError:
        raise UserError(f"--devices: {text!r} is not a list of device indices; give e.g. 0,1") from None


def _spec_threads(spec) -> int:
    """The largest train.threads any run of the spec asks for (1, the RunConfig default, if none)."""
    asked = [(spec.base.get("train") or {}).get("threads") or 1]
    for block in [*spec.per_model.values(), *spec.per_task.values()]:
        asked.append(block.get("train.threads") or 1)
    p = spec.parameters.get("train.threads")
    if p is not None:
        asked += [v for v in (getattr(p, "values", None) or []) if isinstance(v, int)] or [getattr(p, "max", 1) or 1]
    return max(int(a) for a in asked)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


@dataclass(frozen=True)
class SweepResult:
    """What ``sweep()`` returns: the study it ran (or continued) and where its files are."""

    study: str  # the study name (what ``seqbench report NAME`` takes)
    status: int  # 0 when every worker finished cleanly and no trial stands failed outside the experiment
    out_dir: Path  # runs/ and the default journal live here
    storage: str | None  # as given (None: the journal under out_dir)
    trials: list[Any]  # the study's trials after the sweep (optuna FrozenTrial)
    spec: Any  # the resolved SweepSpec


def sweep(spec: str | Path, overrides: Sequence[str] = (), *, trials: int | None = None, workers: int = 1,
          devices: list[int] | None = None, storage: str | None = None, study: str | None = None,
          out_dir: str | Path | None = None, heartbeat: float = 10.0, argv: Sequence[str] | None = None,
          quiet_summary: bool = False, retry_failed: bool = False) -> SweepResult:
    """Run (or continue) the study of sweep spec ``spec`` (a path or a shipped name) with ``overrides``
    applied to its base: the one entry behind ``seqbench sweep``, ``compare`` and ``verify``.

    ``argv`` is the command line recorded as provenance (default: the equivalent ``seqbench sweep``
    command); storage passwords are redacted from it. Prints progress (a line per trial started and
    finished) and, unless ``quiet_summary``, the best-configurations table. ``retry_failed``: run again
    the trials that failed for a reason outside the experiment (``sweeps.study.requeue_failed``); while
    some stand failed (a full disk, memory, a kill), ``status`` is 1.
    """
    if workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {workers})")
    if trials is not None and trials < 1:
        raise UserError(f"--trials: must be >= 1 (got {trials})")
    if heartbeat <= 0:
        raise UserError(f"--heartbeat: must be > 0 seconds (got {heartbeat})")
    # here, not at the top: `sweep --print-config/--help` import no torch; the workers are forked after
    # this process has imported torch and Lightning, so none of them pays for that import again
    from seqbench.sweeps import processes, worker

    resolved, composed = resolve_spec(spec_path(str(spec)), list(overrides), trials=trials)
    for line in notes(composed, f"{spec} base") if composed else []:
        print(line, file=sys.stderr)
    placed = processes.placement(workers, devices, processes.visible_cuda_devices())
    optuna_quiet()
    out = str(out_dir or resolved.base.get("out_dir") or "outputs")
    # Each worker keeps train.threads (default 1: small recurrent models ran 2.7-12x slower with 2
    # intra-op threads on 2 busy cores, and 8x slower in a 1-worker sweep); a spec that asks for more
    # is capped so K workers never oversubscribe the machine.
    threads = max(1, cores() // workers) if _spec_threads(resolved) > cores() // workers else None
    if argv is None:
        argv = [str(spec), *overrides, *(["--trials", str(trials)] if trials else []), "--workers", str(workers),
                *(["--storage", storage] if storage else []), *(["--study", study] if study else []),
                "--out-dir", out]
    job = Job(spec=resolved.to_dict(), spec_path=str(spec), study=study or Path(str(spec)).stem,
              storage=storage, out_dir=out, threads=threads, heartbeat=heartbeat,
              argv=[redact(a) for a in ["seqbench", "sweep", *argv]])
    check_scheme(storage)
    check_writable(Path(out))  # one line now, not a failed trial per configuration later
    opened: dict[str, Any] = {}
    with journal_space(storage, out, lambda: space_needed(opened.get("study"), resolved, out)):
        st = opened["study"] = open_study(job, resolved, coordinator=True)
        _announce(job, resolved, st, workers, placed, retry_failed)
        if workers == 1 and devices is None:
            worker.worker(job, st)
            status = 0
        else:  # --devices with one worker: a process of its own, so the device choice is exact
            status = processes.run_workers(job, workers, placed)
        final = st.get_trials(deepcopy=False)  # read only: reopening would append to the journal
    if status == 0 and any(failed_outside(t) for t in failed_trials(final)):
        status = 1  # not done: a full disk, memory, a kill; the summary says --retry-failed runs them again
    if not quiet_summary:
        print(summary(final, resolved))
    return SweepResult(job.study, status, Path(out), storage, final, resolved)


def _announce(job: Job, resolved: Any, st: Any, workers: int, placed: list[str | None], retry_failed: bool) -> None:
    """The sweep's opening lines: what --retry-failed queued, the study and where it stands, the question."""
    if retry_failed:
        again = requeue_failed(st)
        print(f"--retry-failed: {len(again)} trial(s) that failed outside the experiment queued again"
              + (f" ({', '.join(str(t.number) for t in again)})" if again else ""), flush=True)
    print(f"study {job.study}: {resolved.method}, {resolved.budget()} configurations x {len(resolved.seeds)} "
          f"seed(s), {done_text(st.get_trials(deepcopy=False))}; {workers} worker(s)"
          + (f", {job.threads} torch thread(s) each" if job.threads else "")
          + f"; storage {describe(job.storage, job.out_dir)}", flush=True)
    if resolved.question:
        print(f"question: {resolved.question}", flush=True)
    if placed[0] is not None:
        print("CUDA_VISIBLE_DEVICES per worker: " + ", ".join(placed), flush=True)


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.print_config:
        resolved, composed = resolve_spec(spec_path(args.spec), args.overrides, trials=args.trials)
        for line in notes(composed, f"{args.spec} base") if composed else []:
            print(line, file=sys.stderr)
        print(yaml.safe_dump(resolved.to_dict(), sort_keys=False), end="")
        return 0
    r = sweep(args.spec, args.overrides, trials=args.trials, workers=args.workers, devices=args.devices,
              storage=args.storage, study=args.study, out_dir=args.out_dir, heartbeat=args.heartbeat,
              argv=args.command_line[2:], retry_failed=args.retry_failed)
    print(f"runs under {runs_path(r.out_dir)}; dashboard: {report_hint(r.study, str(r.out_dir), r.storage)}")
    return r.status


def report_hint(study: str, out_dir: str, storage: str | None) -> str:
    """The ``seqbench report`` command that finds this study: the out-dir and storage this sweep
    used (the storage's password redacted), each only when it is not the default."""
    words = ["seqbench", "report", study]
    if Path(out_dir) != Path("outputs"):
        words += ["--out-dir", out_dir]
    if storage:
        words += ["--storage", redact(storage)]
    return " ".join(shlex.quote(w) for w in words)


