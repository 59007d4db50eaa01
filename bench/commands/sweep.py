"""``seqbench sweep SPEC [--trials N] [--workers K] [--storage URL] [--study NAME]``.

Re-running the same command continues the study: finished trials are kept, a grid is never
duplicated, trials of dead workers are retried, and the command ends when the budget is met.
Prints a line when a trial starts and one when it ends (``[done/total, ETA]``), a table of the
best configurations, and the ``seqbench report`` command that finds the study
(``sweeps/progress.py``).

What a study stores (the contract with ``reports/``, see helpers' CONTRACT_SWEEP_REPORT):
study user attrs ``spec``, ``spec_path``, ``question``, ``metrics``, ``out_dir``,
``seqbench_version``, ``git_sha``; trial params = the spec's dotted keys; trial user attrs
``run_ids``, ``seeds``, ``per_seed``, ``mean``, ``std``, ``n_diverged``, ``config_hash``,
``wall_s``, and ``fail_reason`` on FAIL; besides, ``prune_reason`` on PRUNED, ``retried`` on a
FAIL whose configuration was queued again (dead worker, Ctrl-C), and ``retry_of`` /
``resume_run_ids`` on that retry (its runs continue the dead trial's from their checkpoints).
"""
from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

import yaml

from seqbench.bench.core.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("sweep", help="run (or continue) an Optuna study from a sweep spec")
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
    sp.add_argument("--print-config", action="store_true", help="print the resolved spec (its base with the "
                    "overrides applied, --trials included) as YAML and exit")
    sp.set_defaults(func=cmd_sweep, argv=None)


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


def run_sweep(argv: list[str]) -> int:
    """``seqbench sweep ARGV`` from inside another command (compare, verify): the sweep's own argument
    defaults, and ``argv`` recorded as the equivalent command line (provenance)."""
    parser = argparse.ArgumentParser(prog="seqbench")
    register(parser.add_subparsers(dest="command"))
    args = parser.parse_args(["sweep", *argv])
    args.argv = argv
    return cmd_sweep(args)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cmd_sweep(args: argparse.Namespace) -> int:
    # imported here, not at the top: `seqbench --help` stays free of optuna
    from seqbench.bench.config import notes
    from seqbench.bench.training.tracking import check_writable
    from seqbench.sweeps import spec_path
    from seqbench.sweeps.progress import summary
    from seqbench.sweeps.runner import (Job, counts_as_done, open_study, optuna_quiet, placement, run_workers,
                                        visible_cuda_devices, worker)
    from seqbench.sweeps.spec import resolve_spec
    from seqbench.sweeps.storage import check_scheme, describe, redact

    if args.workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {args.workers})")
    if args.trials is not None and args.trials < 1:
        raise UserError(f"--trials: must be >= 1 (got {args.trials})")
    if args.heartbeat <= 0:
        raise UserError(f"--heartbeat: must be > 0 seconds (got {args.heartbeat})")
    spec, composed = resolve_spec(spec_path(args.spec), args.overrides, trials=args.trials)
    for line in notes(composed, f"{args.spec} base") if composed else []:
        print(line, file=sys.stderr)
    if args.print_config:
        print(yaml.safe_dump(spec.to_dict(), sort_keys=False), end="")
        return 0
    devices = placement(args.workers, args.devices, visible_cuda_devices())
    optuna_quiet()
    out_dir = str(args.out_dir or spec.base.get("out_dir") or "outputs")
    # Each worker keeps train.threads (default 1: small recurrent models ran 2.7-12x slower with 2
    # intra-op threads on 2 busy cores, and 8x slower in a 1-worker sweep); a spec that asks for more
    # is capped so K workers never oversubscribe the machine.
    threads = max(1, cores() // args.workers) if _spec_threads(spec) > cores() // args.workers else None
    # the command line is provenance (results.json, W&B metadata): never with a storage password
    sys.argv[:] = [redact(a) for a in sys.argv]
    job = Job(spec=spec.to_dict(), spec_path=args.spec, study=args.study or Path(args.spec).stem,
              storage=args.storage, out_dir=out_dir, threads=threads, heartbeat=args.heartbeat,
              argv=[redact(a) for a in ["seqbench", "sweep", *(sys.argv[2:] if args.argv is None else args.argv)]])
    check_scheme(args.storage)
    check_writable(Path(out_dir))  # one line now, not a failed trial per configuration later
    study = open_study(job, spec, coordinator=True)
    done = sum(1 for t in study.get_trials(deepcopy=False) if counts_as_done(t))
    print(f"study {job.study}: {spec.method}, {spec.budget()} configurations x {len(spec.seeds)} seed(s), "
          f"{done} done; {args.workers} worker(s)" + (f", {threads} torch thread(s) each" if threads else "")
          + f"; storage {describe(args.storage, out_dir)}", flush=True)
    if spec.question:
        print(f"question: {spec.question}", flush=True)
    if devices[0] is not None:
        print("CUDA_VISIBLE_DEVICES per worker: " + ", ".join(devices), flush=True)
    if args.workers == 1 and args.devices is None:
        worker(job, study)
        status = 0
    else:  # --devices with one worker: a process of its own, so the device choice is exact
        status = run_workers(job, args.workers, devices)
    study = open_study(job, spec, coordinator=False)
    print(summary(study.get_trials(deepcopy=False), spec))
    print(f"runs under {Path(out_dir) / 'runs'}; dashboard: {report_hint(job.study, out_dir, args.storage)}")
    return status


def report_hint(study: str, out_dir: str, storage: str | None) -> str:
    """The ``seqbench report`` command that finds this study: the out-dir and storage this sweep
    used (the storage's password redacted), each only when it is not the default."""
    from seqbench.sweeps.storage import redact

    words = ["seqbench", "report", study]
    if Path(out_dir) != Path("outputs"):
        words += ["--out-dir", out_dir]
    if storage:
        words += ["--storage", redact(storage)]
    return " ".join(shlex.quote(w) for w in words)


