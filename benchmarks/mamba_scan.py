"""Mamba-1's selective scan on a CPU, chunked against mambapy's pscan, as ratios to attention.

Issue 37: the chunked scan of ``models/mamba.py`` ("chunked") against mambapy's parallel scan
("pscan", what the mixer ran before), each as a ratio to causal softmax attention timed in the same run.

    python benchmarks/mamba_scan.py                  # everything below, one thread: about 3 minutes
    python benchmarks/mamba_scan.py --no-pscan       # the chunked scan only (pscan alone takes ~2 min)
    python benchmarks/mamba_scan.py --lengths 256 1024 --exponent-lengths

Three tables, each step a forward and the backward of a mean-square loss:

- mixer: one mixer alone, d_model 64, batch 8 (``benchmarks/mixers.py``'s setting and its reference,
  ``CausalAttention``: q/k/v/out projections around ``F.scaled_dot_product_attention``, 4 heads), at
  ``--lengths``. Issue 37's targets for the chunked scan: <= 3x attention at T = 256, <= 1x at 4096.
- exponent: the least-squares slope of log(step time) over log(T) at ``--exponent-lengths`` (target
  <= 1.1 over 512-8192), same setting.
- probe: the probe's quick profile (``sweeps/probes.py``): d_model 32, batch 32, two pre-norm blocks
  of mixer + MLP (d_ff 64) and a final norm, attention with 2 heads (the registry's ``attention``
  mixer), at ``--probe-lengths``; the embedding and head, the same for every mixer, are left out.

Times are process CPU seconds per step (``time.process_time``), the median of ``--repeats`` after
``--warmup``: with one intra-op thread that is the work the step cost this process, whatever else
runs on the machine; other processes still share the caches and memory bandwidth, so the ratios,
each measured in one run (attention timed before and after the mixers, the mean of the two), are
the numbers to compare. The load average is printed at the start and the end. Process time includes
the kernel's time for page faults on fresh tensors: at T = 8192 every (8, T, 128) float32 tensor is
32 MiB, which glibc maps afresh at each allocation, so that point (and the exponent) moves from run to
run by up to ~20% for every mixer; ``THP_MEM_ALLOC_ENABLE=1`` (torch's huge-page allocation) removes
most of it.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import torch
from mambapy.mamba import MambaBlock
from torch import nn

import seqbench.models.configs.attention  # noqa: F401  (registers the attention mixer)
from seqbench.bench.core.registry import MIXERS
from seqbench.models.blocks import FeedForward, Residual
from seqbench.models.mamba import Mamba

sys.path.insert(0, str(Path(__file__).parent))
from mixers import CausalAttention  # benchmarks/ is not a package: its own folder is on sys.path


class MambapyScan(nn.Module):
    """The same block run through mambapy's own forward: on a CPU, its Blelloch parallel scan."""

    def __init__(self, mamba: Mamba):
        super().__init__()
        self.block = mamba.block

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return MambaBlock.forward(self.block, x)


def mixer(name: str, d_model: int, heads: int) -> nn.Module:
    """attention (the reference of the table), chunked (the mamba mixer) or pscan (mambapy's path)."""
    if name == "attention":
        return CausalAttention(d_model, heads) if heads == 4 else MIXERS.get("attention").cls(d_model, n_heads=heads)
    mamba = Mamba(d_model)
    return mamba if name == "chunked" else MambapyScan(mamba)


class ProbeStack(nn.Module):
    """The quick profile's backbone: ``n_layers`` x [pre-norm Residual(mixer), Residual(MLP)], final LayerNorm."""

    def __init__(self, make: Callable[[], nn.Module], d: int = 32, d_ff: int = 64, n_layers: int = 2):
        super().__init__()
        layers: list[nn.Module] = []
        for _ in range(n_layers):
            layers += [
                Residual(make(), d, "pre", "layernorm", 0.0),
                Residual(FeedForward(d, d_ff, 0.0), d, "pre", "layernorm", 0.0),
            ]
        self.layers = nn.Sequential(*layers, nn.LayerNorm(d))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


def step_cpu_seconds(module: nn.Module, x: torch.Tensor, warmup: int, repeats: int, least: float = 0.5) -> float:
    """Median process CPU seconds of one forward + backward: ``repeats`` steps, or more until ``least``
    seconds were timed (at most 200), after ``warmup`` untimed ones."""
    times: list[float] = []
    for i in range(warmup + 200):
        t = time.process_time()
        module(x).square().mean().backward()
        module.zero_grad(set_to_none=True)
        if i >= warmup:
            times.append(time.process_time() - t)
            if len(times) >= repeats and sum(times) >= least:
                break
    return statistics.median(times)


def ratios(
    build: Callable[[str], nn.Module], names: list[str], shape: tuple[int, int], T: int, warmup: int, repeats: int
) -> tuple[float, list[float]]:
    """Attention's step time (mean of before and after the others) and each name's ratio to it."""
    batch, d = shape
    x = torch.randn(batch, T, d)
    torch.manual_seed(0)
    attention = build("attention")
    before = step_cpu_seconds(attention, x, warmup, repeats)
    times = []
    for name in names:
        torch.manual_seed(0)
        times.append(step_cpu_seconds(build(name), x, warmup, repeats))
    ref = (before + step_cpu_seconds(attention, x, warmup, repeats)) / 2
    return ref, [t / ref for t in times]


def slope(lengths: list[int], times: list[float]) -> float:
    """Least-squares slope of log(time) over log(T)."""
    xs, ys = [math.log(T) for T in lengths], [math.log(t) for t in times]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((a - mx) * (b - my) for a, b in zip(xs, ys)) / sum((a - mx) ** 2 for a in xs)


def load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--lengths", type=int, nargs="*", default=[256, 1024, 4096])
    ap.add_argument("--exponent-lengths", type=int, nargs="*", default=[512, 1024, 2048, 4096, 8192])
    ap.add_argument("--probe-lengths", type=int, nargs="*", default=[16, 64, 200])
    ap.add_argument("--no-pscan", action="store_true", help="time the chunked scan only")
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    names = ["chunked"] if args.no_pscan else ["chunked", "pscan"]
    print(
        f"{args.threads} thread(s), torch {torch.__version__}, {os.cpu_count()} CPUs, load average {load()}; "
        f"process CPU time per forward+backward, median of {args.repeats} after {args.warmup} warm-up(s)"
    )
    header = f"{'T':>6} {'attention ms':>13} " + " ".join(f"{n + ' x attn':>15}" for n in names)

    print("\nmixer: d_model 64, batch 8, one mixer")
    print(header)
    for T in args.lengths:
        ref, rs = ratios(lambda n: mixer(n, 64, 4), names, (8, 64), T, args.warmup, args.repeats)
        print(f"{T:6d} {1e3 * ref:13.1f} " + " ".join(f"{r:15.2f}" for r in rs), flush=True)

    if args.exponent_lengths:
        print(f"\nexponent: d_model 64, batch 8, step time ~ T^k over T = {args.exponent_lengths}")
        times: dict[str, list[float]] = {n: [] for n in ["attention", *names]}
        for T in args.exponent_lengths:
            x = torch.randn(8, T, 64)
            for n in times:
                torch.manual_seed(0)
                times[n].append(step_cpu_seconds(mixer(n, 64, 4), x, args.warmup, args.repeats))
            print(f"{T:6d} " + " ".join(f"{n} {1e3 * t[-1]:.1f} ms" for n, t in times.items()), flush=True)
        print("k: " + ", ".join(f"{n} {slope(args.exponent_lengths, t):.2f}" for n, t in times.items()))

    print("\nprobe (quick profile): d_model 32, batch 32, 2 x [mixer, MLP d_ff 64], attention 2 heads")
    print(header)
    for T in args.probe_lengths:
        ref, rs = ratios(lambda n: ProbeStack(lambda: mixer(n, 32, 2)), names, (32, 32), T, args.warmup, args.repeats)
        print(f"{T:6d} {1e3 * ref:13.2f} " + " ".join(f"{r:15.2f}" for r in rs), flush=True)
    print(f"\nload average (1, 5, 15 min) at the end: {load()}")


if __name__ == "__main__":
    main()
