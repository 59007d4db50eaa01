"""The linear-time mixers' step time on a CPU, as ratios to causal attention, and its growth in T.

Issue 37's targets (one thread, d_model 64, batch 8, forward + backward, ratio to causal softmax
attention measured in the same run): mamba <= 3x attention at T = 256, <= 1x at 4096, and a time
exponent <= 1.1 over T = 512-8192; linear_attention, s4d and hyena <= 2x at 256, <= 1x at 4096, exponent
<= 1.15 (s4d and hyena convolve by FFT: T log T).

    python benchmarks/mixer_speed.py                       # every mixer, T = 256 ... 8192: ~5 minutes
    python benchmarks/mixer_speed.py --mixers mamba --lengths 256 4096
    python benchmarks/mixer_speed.py --profile mamba 4096  # torch.profiler's table of one step
    python benchmarks/mixer_speed.py --no-kernels          # the PyTorch forms (no C compiler, or off the CPU)

At every length each mixer runs a forward and the backward of a mean-square loss on one (batch, T,
d_model) input, with its default knobs (``models/configs/NAME.py``); the reference is
``benchmarks/mixers.py``'s ``CausalAttention`` (q/k/v/out projections around
``F.scaled_dot_product_attention``, 4 heads), timed before and after the mixers at that length (the
mean of the two). Times are process CPU seconds (``time.process_time``), the median of ``--repeats``
steps (more, up to 50, until half a second was timed) after ``--warmup``: with one intra-op thread
that is the work the step cost, whatever else runs on the machine, though other processes still
share the caches and memory bandwidth, so compare the ratios, each measured in one run. The exponent
is the least-squares slope of log(step time) over log(T) at the lengths from 512 on. The load average
is printed at the start and the end.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

import torch
from torch import nn

import seqbench.models.configs.hyena  # each config module registers itself in MIXERS
import seqbench.models.configs.linear_attention
import seqbench.models.configs.mamba
import seqbench.models.configs.s4d  # noqa: F401
from seqbench.bench.core.registry import MIXERS
from seqbench.models import cpu

sys.path.insert(0, str(Path(__file__).parent))
from mixers import CausalAttention  # benchmarks/ is not a package: its own folder is on sys.path

MIXER_NAMES = ["mamba", "linear_attention", "s4d", "hyena"]
EXPONENT_FROM = 512  # the exponent is fitted over lengths >= this (issue 37: 512-8192)


def build(name: str, d_model: int) -> nn.Module:
    if name == "attention":
        return CausalAttention(d_model)
    entry = MIXERS.get(name)
    return entry.cls(d_model, **entry.config_cls(name=name).args())


def step_cpu_seconds(module: nn.Module, x: torch.Tensor, warmup: int, repeats: int, least: float = 0.5) -> float:
    """Median process CPU seconds of one forward + backward: ``repeats`` steps, or more until ``least``
    seconds were timed (at most 50), after ``warmup`` untimed ones."""
    times: list[float] = []
    for i in range(warmup + 50):
        t = time.process_time()
        module(x).square().mean().backward()
        module.zero_grad(set_to_none=True)
        if i >= warmup:
            times.append(time.process_time() - t)
            if len(times) >= repeats and sum(times) >= least:
                break
    return statistics.median(times)


def slope(lengths: list[int], times: list[float]) -> float:
    """Least-squares slope of log(time) over log(T)."""
    xs, ys = [math.log(T) for T in lengths], [math.log(t) for t in times]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def profile(name: str, T: int, d_model: int, batch: int, rows: int = 25) -> None:
    """torch.profiler's table of one forward + backward (after one warm-up), by self CPU time."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    mixer, x = build(name, d_model), torch.randn(batch, T, d_model)
    mixer(x).square().mean().backward()
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        mixer(x).square().mean().backward()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mixers", nargs="+", default=MIXER_NAMES, choices=MIXER_NAMES)
    ap.add_argument("--lengths", type=int, nargs="+", default=[256, 512, 1024, 2048, 4096, 8192])
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--profile", nargs=2, metavar=("MIXER", "T"), help="print torch.profiler's table of one step")
    ap.add_argument(
        "--no-kernels", action="store_true", help="the PyTorch forms, without the C kernels (models/cpu.py)"
    )
    args = ap.parse_args()
    if args.no_kernels:
        os.environ[cpu.ENV] = "0"
    torch.set_num_threads(args.threads)
    if args.profile:
        profile(args.profile[0], int(args.profile[1]), args.d_model, args.batch)
        return
    print(
        f"d_model {args.d_model}, batch {args.batch}, {args.threads} thread(s), torch {torch.__version__}, "
        f"load average {load()}; process CPU time per forward+backward, median of >= {args.repeats}"
    )
    print(f"{'T':>6} {'attention ms':>13} " + " ".join(f"{n:>17}" for n in args.mixers) + "   (x attention)")
    times: dict[str, list[float]] = {n: [] for n in ["attention", *args.mixers]}
    for T in args.lengths:
        x = torch.randn(args.batch, T, args.d_model)
        torch.manual_seed(0)
        attention = build("attention", args.d_model)
        before = step_cpu_seconds(attention, x, args.warmup, args.repeats)
        for name in args.mixers:
            torch.manual_seed(0)
            times[name].append(step_cpu_seconds(build(name, args.d_model), x, args.warmup, args.repeats))
        times["attention"].append((before + step_cpu_seconds(attention, x, args.warmup, args.repeats)) / 2)
        ref = times["attention"][-1]
        print(f"{T:6d} {1e3 * ref:13.1f} " + " ".join(f"{t[-1] / ref:17.2f}" for t in list(times.values())[1:]))
    fit = [i for i, T in enumerate(args.lengths) if T >= EXPONENT_FROM]
    if len(fit) >= 2:
        lengths = [args.lengths[i] for i in fit]
        print(
            f"exponent over T = {lengths[0]}-{lengths[-1]}: "
            + ", ".join(f"{n} {slope(lengths, [t[i] for i in fit]):.2f}" for n, t in times.items())
        )
    print(f"load average (1, 5, 15 min) at the end: {load()}")


if __name__ == "__main__":
    main()
