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
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path

import yaml

from seqbench.bench.config import notes
from seqbench.bench.core.artifacts import runs_path
from seqbench.bench.core.errors import UserError
from seqbench.bench.core.text import redact
from seqbench.sweeps import spec_path
from seqbench.sweeps.coordinator import SweepResult, check_counts, run_sweep, sweep_argv
from seqbench.sweeps.spec import SweepSpec, resolve_spec


def register(sp: argparse.ArgumentParser) -> None:
    sp.add_argument("spec", help="sweep YAML path, or the name of a shipped sweep (seqbench list), e.g. demo")
    sp.add_argument(
        "overrides",
        nargs="*",
        help="dotted key=value applied to the spec's base in any order, "
        "e.g. train.max_steps=200 (a changed spec needs a new --study); a key the spec sweeps "
        "or sets per model/task is refused",
    )
    sp.add_argument("--trials", type=int, help="budget (grid: run the first N points)")
    sp.add_argument("--workers", type=int, default=1, help="local worker processes sharing the study")
    sp.add_argument(
        "--devices",
        type=parse_devices,
        help="CUDA device indices for the workers, e.g. 0,1 "
        "(round-robin, several workers per device; default: every visible CUDA device)",
    )
    sp.add_argument(
        "--storage",
        help="journal file path, journal:///path, or postgresql://... / mysql://... "
        "(default: <out_dir>/optuna.journal)",
    )
    sp.add_argument("--study", help="study name (default: the spec file's stem)")
    sp.add_argument(
        "--out-dir", help="where runs and the default journal go (default: the spec's base.out_dir, else outputs)"
    )
    sp.add_argument(
        "--heartbeat",
        type=float,
        default=10.0,
        help="seconds between liveness stamps; a trial silent for 6 of them is failed and retried",
    )
    sp.add_argument(
        "--retry-failed",
        action="store_true",
        help="queue again the trials that failed for a reason "
        "outside the experiment (no space left, out of memory, killed); diverged trials stay",
    )
    sp.add_argument(
        "--print-config",
        action="store_true",
        help="print the resolved spec (its base with the overrides applied, --trials included) as YAML and exit",
    )
    sp.set_defaults(func=cmd_sweep)


def parse_devices(text: str) -> list[int]:
    """``--devices 0,1`` -> [0, 1] (indices as this process numbers its CUDA devices)."""
    try:
        return [int(d) for d in text.split(",")]
    except ValueError:
        raise UserError(f"--devices: {text!r} is not a list of device indices; give e.g. 0,1") from None


def sweep(
    spec: SweepSpec | str | Path,
    overrides: Sequence[str] = (),
    *,
    trials: int | None = None,
    workers: int = 1,
    devices: list[int] | None = None,
    storage: str | None = None,
    study: str | None = None,
    out_dir: str | Path | None = None,
    heartbeat: float = 10.0,
    argv: Sequence[str] | None = None,
    quiet_summary: bool = False,
    retry_failed: bool = False,
    source: str | Path | None = None,
) -> SweepResult:
    """Run (or continue) the study of sweep spec ``spec`` (a path, a shipped name, or a validated
    ``SweepSpec``) with ``overrides`` applied to its base: the entry behind ``seqbench sweep``, ``compare``,
    ``probe`` and the notebook's ``seqbench.sweep`` (``sweeps.coordinator.run_sweep`` runs it).

    A ``SweepSpec`` needs ``study`` and takes no overrides or trials; ``source`` is the file it was written
    to (``compare`` and ``probe`` write its YAML beside the study), recorded as the study's spec file and in
    the runs' command line, so they read as those of ``seqbench sweep SOURCE --study NAME``, which continues
    the study; without it they say ``<SweepSpec>``.

    ``argv`` is the command line recorded as provenance (default: the equivalent ``seqbench sweep``
    command); storage passwords are redacted from it. Prints progress (a line per trial started and
    finished) and, unless ``quiet_summary``, the best-configurations table. ``retry_failed``: run again
    the trials that failed for a reason outside the experiment (``sweeps.study.requeue_failed``); while
    some stand failed (a full disk, memory, a kill), ``status`` is 1.
    """
    check_counts(workers, heartbeat)
    if trials is not None and trials < 1:
        raise UserError(f"--trials: must be >= 1 (got {trials})")
    resolved, where = _resolved(spec, overrides, trials, study, source)
    out = str(out_dir or resolved.base.get("out_dir") or "outputs")
    if argv is None:
        argv = sweep_argv(where, overrides, trials=trials, workers=workers, storage=storage, study=study, out_dir=out)
    return run_sweep(
        resolved,
        study=study or Path(where).stem,
        source=where,
        out_dir=out,
        argv=argv,
        workers=workers,
        devices=devices,
        storage=storage,
        heartbeat=heartbeat,
        quiet_summary=quiet_summary,
        retry_failed=retry_failed,
    )


def _resolved(
    spec: SweepSpec | str | Path,
    overrides: Sequence[str],
    trials: int | None,
    study: str | None = "",
    source: str | Path | None = None,
) -> tuple[SweepSpec, str]:
    """The validated spec with the overrides and budget applied, and where it came from (its notes on stderr)."""
    if isinstance(spec, SweepSpec):
        if overrides or trials is not None or study is None:
            raise UserError("sweep: a SweepSpec takes no overrides or trials (they are in it) and needs study=NAME")
        return spec, str(source or "<SweepSpec>")
    if source is not None:
        raise UserError("sweep: source= names where a SweepSpec was written; a spec file is its own source")
    resolved, composed = resolve_spec(spec_path(str(spec)), list(overrides), trials=trials)
    for line in notes(composed, f"{spec} base") if composed else []:
        print(line, file=sys.stderr)
    return resolved, str(spec)


def cmd_sweep(args: argparse.Namespace) -> int:
    if args.print_config:
        resolved, _ = _resolved(args.spec, args.overrides, args.trials)
        print(yaml.safe_dump(resolved.to_dict(), sort_keys=False), end="")
        return 0
    r = sweep(
        args.spec,
        args.overrides,
        trials=args.trials,
        workers=args.workers,
        devices=args.devices,
        storage=args.storage,
        study=args.study,
        out_dir=args.out_dir,
        heartbeat=args.heartbeat,
        argv=args.command_line[2:],
        retry_failed=args.retry_failed,
    )
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
