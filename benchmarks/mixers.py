"""Forward + backward step time of each sequence mixer, against causal softmax attention.

    python benchmarks/mixers.py                          # d_model 64, batch 8, T 256 and 1024, one thread
    python benchmarks/mixers.py --lengths 256 1024 4096 --threads 2
    python benchmarks/mixers.py --mixers mamba2 gated_deltanet --lengths 256 512 1024 2048 4096 8192

One step is a forward pass of the mixer alone on a (batch, T, d_model) input and the backward pass of
a mean-square loss; printed per mixer and length: the median of ``--repeats`` steps after
``--warmup`` unmeasured ones, and the ratio to the reference, plain causal attention
(``F.scaled_dot_product_attention`` between q/k/v/out projections, 4 heads), which is quadratic in T
where the mixers are not. At each length the mixers take turns, one step each per round, so that a
change of load on a shared machine slows every row of that length alike; with two lengths or more the
time exponent over T (least-squares slope of log time on log T) closes each row. Mixers run with their
default knobs (``models/configs/NAME.py``), on CPU unless ``--device`` says otherwise. The load average
is printed with the numbers: time exponents are only meaningful on a quiet machine.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

import seqbench.models.configs.gated_deltanet  # each config module registers itself in MIXERS
import seqbench.models.configs.hyena
import seqbench.models.configs.linear_attention
import seqbench.models.configs.mamba
import seqbench.models.configs.mamba2
import seqbench.models.configs.s4d  # noqa: F401
from seqbench.bench.core.registry import MIXERS

MIXER_NAMES = ["mamba", "s4d", "linear_attention", "hyena", "mamba2", "gated_deltanet"]


class CausalAttention(nn.Module):
    """The reference: multi-head causal softmax attention with q, k, v and out projections."""

    def __init__(self, d_model: int, n_heads: int = 4):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, d = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_heads, d // self.n_heads).permute(2, 0, 3, 1, 4)  # 3 x (B, H, T, hd)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)  # (B, H, T, hd)
        return self.out(y.transpose(1, 2).reshape(B, T, d))  # (B, T, d)


def build(name: str, d_model: int) -> nn.Module:
    if name == "attention":
        return CausalAttention(d_model)
    entry = MIXERS.get(name)
    return entry.cls(d_model, **entry.config_cls(name=name).args())


def one_step(mixer: nn.Module, x: torch.Tensor) -> float:
    """Wall seconds of one forward + backward."""
    if x.is_cuda:
        torch.cuda.synchronize()
    t = time.perf_counter()
    mixer(x).square().mean().backward()
    if x.is_cuda:
        torch.cuda.synchronize()
    mixer.zero_grad(set_to_none=True)
    return time.perf_counter() - t


def step_seconds(mixer: nn.Module, x: torch.Tensor, warmup: int, repeats: int) -> float:
    """Median wall seconds of one forward + backward."""
    return statistics.median([one_step(mixer, x) for _ in range(warmup + repeats)][warmup:])


def interleaved_seconds(mixers: dict[str, nn.Module], x: torch.Tensor, warmup: int, repeats: int) -> dict[str, float]:
    """Median wall seconds of one forward + backward of each mixer, the mixers taking turns step by step."""
    times: dict[str, list[float]] = {name: [] for name in mixers}
    for i in range(warmup + repeats):
        for name, mixer in mixers.items():
            t = one_step(mixer, x)
            if i >= warmup:
                times[name].append(t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def time_exponent(lengths: list[int], seconds: list[float]) -> float:
    """Least-squares slope of log(seconds) on log(T): 1 for linear cost, 2 for quadratic."""
    xs, ys = [math.log(T) for T in lengths], [math.log(s) for s in seconds]
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lengths", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--mixers", nargs="+", default=MIXER_NAMES, help="which mixers besides attention")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(
        f"d_model {args.d_model}, batch {args.batch}, {args.threads} thread(s), {device}, torch {torch.__version__}; "
        f"median of {args.repeats} after {args.warmup} warm-ups, mixers taking turns"
    )
    names = ["attention", *[n for n in args.mixers if n != "attention"]]
    mixers, params = {}, {}
    for name in names:
        torch.manual_seed(0)
        mixers[name] = build(name, args.d_model).to(device)
        params[name] = sum(p.numel() for p in mixers[name].parameters())
    rows: dict[str, list[float]] = {name: [] for name in names}
    for T in args.lengths:
        x = torch.randn(args.batch, T, args.d_model, device=device)
        for name, s in interleaved_seconds(mixers, x, args.warmup, args.repeats).items():
            rows[name].append(s)
        load = " ".join(f"{v:.2f}" for v in os.getloadavg())
        print(f"  T={T} done, load average {load}", flush=True)
    exponent = len(args.lengths) > 1
    print(
        f"{'mixer':<18} {'params':>8} "
        + " ".join(f"{f'T={T} ms':>11} {'x attn':>7}" for T in args.lengths)
        + (f" {'exponent':>8}" if exponent else "")
    )
    for name in names:
        cells = " ".join(f"{1e3 * s:11.1f} {s / ref:7.2f}" for s, ref in zip(rows[name], rows["attention"]))
        slope = f" {time_exponent(args.lengths, rows[name]):8.2f}" if exponent else ""
        print(f"{name:<18} {params[name]:8d} {cells}{slope}", flush=True)
    print("load average (1, 5, 15 min): " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
