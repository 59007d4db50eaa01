"""Sweep throughput: trials/hour of one fixed small grid with 1, 2, 4, 8 local workers.

    python benchmarks/sweep_throughput.py                          # workers 1,2,4,8 (capped, see below)
    python benchmarks/sweep_throughput.py --workers 1,2 --trials 6 --steps 30
    python benchmarks/sweep_throughput.py --workers 1,4,8,16 --devices 0   # GPU: all on cuda:0
    python benchmarks/sweep_throughput.py --workers 1,2 --steps 300 --repeat 5  # median of 5 per row

Each worker count runs the same grid from scratch (a fresh out dir and journal) through the real
command, ``seqbench sweep SPEC --workers K``, exactly as a user would: wall time includes starting
the workers, creating the study and the closing summary. The grid is ``--trials`` learning rates
of one small model (identical cost per trial) for ``--steps`` steps each, no test split, no W&B.
On a GPU machine the workers land round-robin on the visible GPUs (``--devices`` narrows them).

trials/hour = completed trials / wall seconds * 3600; speed-up is against the 1-worker row. The
1-minute load average before and after each row is printed: on a shared machine other processes
take cores too, and a row is only as clean as its load. With ``--repeat N`` every worker count runs
N times, the counts taking turns (1, 2, 1, 2, ...) so a change in the machine's load hits each
alike; a row shows the median wall time, its range, and the load averages over its runs.

Default worker counts above 2 x the CPU cores are skipped (they only oversubscribe the cores with
one intra-op thread each); counts passed explicitly with ``--workers`` always run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import yaml

DEFAULT_WORKERS = (1, 2, 4, 8)


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def grid_spec(model: str, d_model: int, trials: int, steps: int, batch_size: int) -> dict:
    """``trials`` learning rates of one model on a short copy task: every trial costs the same."""
    return {
        "question": "sweep throughput benchmark (benchmarks/sweep_throughput.py)",
        "base": {
            "task": {"name": "copy", "n_symbols": 3, "alphabet": 4, "delay": 20},
            "model": {"name": model, "d_model": d_model},
            "train": {
                "max_steps": steps,
                "val_every": steps,
                "val_batches": 1,
                "batch_size": batch_size,
                "checkpoint_every": None,
            },
            "eval": {"test": False},
            "tracking": {"wandb": "off"},
        },
        "method": "grid",
        "metric": {"name": "val/acc", "goal": "maximize"},
        "parameters": {"optim.lr": {"values": [round(1e-3 * (i + 1), 6) for i in range(trials)]}},
    }


def completed_runs(out_dir: Path) -> int:
    n = 0
    for p in (out_dir / "runs").glob("*/results.json"):
        try:
            n += json.loads(p.read_text()).get("status") == "completed"
        except (OSError, ValueError):
            continue
    return n


def one_row(spec: dict, workers: int, devices: str | None) -> dict:
    with tempfile.TemporaryDirectory(prefix="seqbench-throughput-") as tmp:
        path = Path(tmp) / "grid.yaml"
        path.write_text(yaml.safe_dump(spec, sort_keys=False))
        out = Path(tmp) / "out"
        cmd = [
            sys.executable,
            "-m",
            "seqbench",
            "sweep",
            str(path),
            "--workers",
            str(workers),
            "--out-dir",
            str(out),
            "--study",
            f"throughput-{workers}",
        ]
        if devices:
            cmd += ["--devices", devices]
        load0 = os.getloadavg()[0]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "WANDB_MODE": "disabled"})
        wall = time.perf_counter() - t0
        if r.returncode != 0:
            raise SystemExit(f"error: the sweep with {workers} workers exited {r.returncode}:\n{r.stderr[-2000:]}")
        return {
            "workers": workers,
            "wall_s": wall,
            "trials": completed_runs(out),
            "load0": load0,
            "load1": os.getloadavg()[0],
        }


def device_line(devices: str | None) -> str:
    if torch.cuda.is_available():
        names = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())]
        return f"{len(names)} CUDA device(s): {', '.join(names)}" + (f"; --devices {devices}" if devices else "")
    return f"CPU only, {cores()} core(s)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", help="comma-separated worker counts (default 1,2,4,8, capped at 2 x cores)")
    ap.add_argument("--trials", type=int, default=8, help="grid size (learning rates)")
    ap.add_argument("--steps", type=int, default=60, help="training steps per trial")
    ap.add_argument("--model", default="lstm")
    ap.add_argument("--d-model", type=int, default=32)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--devices", help="passed to seqbench sweep --devices (GPU machines)")
    ap.add_argument("--repeat", type=int, default=1, help="runs per worker count; a row is their median")
    args = ap.parse_args()
    if args.workers:
        try:
            counts = [int(k) for k in args.workers.split(",")]
        except ValueError:
            raise SystemExit(f"error: --workers: {args.workers!r} is not a list of counts; give e.g. 1,2,4") from None
        if any(k < 1 for k in counts):
            raise SystemExit("error: --workers: every count must be >= 1")
    else:
        counts = [k for k in DEFAULT_WORKERS if k <= 2 * cores()]
        skipped = [k for k in DEFAULT_WORKERS if k not in counts]
        if skipped:
            print(
                f"skipping {','.join(map(str, skipped))} workers on {cores()} cores "
                f"(pass --workers {','.join(map(str, DEFAULT_WORKERS))} to run them anyway)"
            )
    if args.trials < 1 or args.steps < 1 or args.repeat < 1:
        raise SystemExit("error: --trials, --steps and --repeat must be >= 1")
    spec = grid_spec(args.model, args.d_model, args.trials, args.steps, args.batch_size)
    print(
        f"{device_line(args.devices)}; grid: {args.trials} trials of {args.model} d_model={args.d_model}, "
        f"{args.steps} steps, batch {args.batch_size}"
    )
    print(
        f"speed-up against the {counts[0]}-worker row" + (f"; median of {args.repeat} runs" if args.repeat > 1 else "")
    )
    runs: dict[int, list[dict]] = {k: [] for k in counts}
    for _ in range(args.repeat):
        for k in counts:
            runs[k].append(one_row(spec, k, args.devices))
            if args.repeat > 1:
                r = runs[k][-1]
                print(f"  ({k} worker(s): {r['wall_s']:.1f} s, load {r['load0']:.2f} -> {r['load1']:.2f})", flush=True)
    print(
        f"{'workers':>7} {'wall s':>8} {'range s':>11} {'trials':>6} {'trials/h':>9} {'speed-up':>8}   "
        "load avg (1 min) before -> after"
    )
    base = None
    for k in counts:
        walls = sorted(r["wall_s"] for r in runs[k])
        wall = statistics.median(walls)
        trials = min(r["trials"] for r in runs[k])
        rate = trials / wall * 3600
        base = base or rate
        loads = (statistics.mean(r["load0"] for r in runs[k]), statistics.mean(r["load1"] for r in runs[k]))
        print(
            f"{k:>7} {wall:>8.1f} {walls[0]:>5.1f}-{walls[-1]:<5.1f} {trials:>6} {rate:>9.0f} "
            f"{rate / base if base else 0:>7.2f}x   {loads[0]:.2f} -> {loads[1]:.2f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
