"""``seqbench sweep SPEC [--trials N] [--workers K] [--storage URL] [--study NAME]``.

Re-running the same command continues the study: finished trials are kept, a grid is never
duplicated, trials of dead workers are retried, and the command ends when the budget is met.
Prints one line per finished trial and a table of the best configurations.

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
import sys
from pathlib import Path
from typing import Any

from optuna.trial import FrozenTrial, TrialState

from seqbench.bench.errors import UserError


def register(sub: argparse._SubParsersAction) -> None:
    sp = sub.add_parser("sweep", help="run (or continue) an Optuna study from a sweep spec")
    sp.add_argument("spec", help="sweep YAML, e.g. sweeps/demo.yaml")
    sp.add_argument("overrides", nargs="*", help="dotted key=value applied to the spec's base, "
                    "e.g. train.max_steps=200 (a changed spec needs a new --study)")
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


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def cmd_sweep(args: argparse.Namespace) -> int:
    from seqbench.bench.tracking import check_writable
    from seqbench.sweeps.runner import Job, open_study, optuna_quiet, placement, run_workers, visible_cuda_devices, worker
    from seqbench.sweeps.spec import load_spec
    from seqbench.sweeps.storage import check_scheme, describe, redact

    if args.workers < 1:
        raise UserError(f"--workers: must be >= 1 (got {args.workers})")
    if args.trials is not None and args.trials < 1:
        raise UserError(f"--trials: must be >= 1 (got {args.trials})")
    if args.heartbeat <= 0:
        raise UserError(f"--heartbeat: must be > 0 seconds (got {args.heartbeat})")
    devices = placement(args.workers, args.devices, visible_cuda_devices())
    optuna_quiet()
    spec = load_spec(args.spec, args.overrides, trials=args.trials)
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
    done = sum(1 for t in study.get_trials(deepcopy=False)
               if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL) and not t.user_attrs.get("retried"))
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
    print(f"runs under {Path(out_dir) / 'runs'}; dashboard: seqbench report {job.study}"
          + (f" --storage {redact(args.storage)}" if args.storage else ""))
    return status


# -- printing ---------------------------------------------------------------------------------

def _params(t: FrozenTrial) -> str:
    return " ".join(f"{k}={_fmt(v)}" for k, v in t.params.items())


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


def trial_line(t: FrozenTrial, metrics) -> str:
    """One line per finished trial: number, state, value, params, wall time (and why, if not complete)."""
    why = t.user_attrs.get("fail_reason") or t.user_attrs.get("prune_reason") or ""
    parts = [f"trial {t.number:>4}", f"{t.state.name:<8}", _value(t, metrics), _params(t),
             f"{t.user_attrs.get('wall_s', 0):.1f}s", f"({why})" if why else ""]
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
    for t in trials:
        name = "retried" if t.state == TrialState.FAIL and t.user_attrs.get("retried") else t.state.name.lower()
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
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    title = "Pareto front" if len(metrics) > 1 else "best configurations"
    lines.append(f"{title}:")
    for r in [head, *rows]:
        lines.append("  " + "  ".join(c.ljust(w) for c, w in zip(r, widths)))
    return "\n".join(lines)
