"""Forward + backward step time of each sequence mixer, against causal softmax attention.

    python benchmarks/mixers.py                          # d_model 64, batch 8, T 256 and 1024, one thread
    python benchmarks/mixers.py --lengths 256 1024 4096 --threads 2

One step is a forward pass of the mixer alone on a (batch, T, d_model) input and the backward pass of
a mean-square loss; printed per mixer and length: the median of ``--repeats`` steps after
``--warmup`` unmeasured ones, and the ratio to the reference, plain causal attention
(``F.scaled_dot_product_attention`` between q/k/v/out projections, 4 heads), which is quadratic in T
where the mixers are not. Mixers run with their default knobs (``models/configs/NAME.py``), on CPU
unless ``--device`` says otherwise. The load average is printed with the numbers: a shared machine
slows every row alike, but not by the same factor over the whole run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

import seqbench.models.configs.hyena  # each config module registers itself in MIXERS
import seqbench.models.configs.linear_attention
import seqbench.models.configs.mamba
import seqbench.models.configs.s4d  # noqa: F401
from seqbench.bench.core.registry import MIXERS

MIXER_NAMES = ["mamba", "s4d", "linear_attention", "hyena"]


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


def step_seconds(mixer: nn.Module, x: torch.Tensor, warmup: int, repeats: int) -> float:
    """Median wall seconds of one forward + backward."""
    times = []
    for i in range(warmup + repeats):
        if x.is_cuda:
            torch.cuda.synchronize()
        t = time.perf_counter()
        mixer(x).square().mean().backward()
        if x.is_cuda:
            torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - t)
        mixer.zero_grad(set_to_none=True)
    return statistics.median(times)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--d-model", type=int, default=64)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lengths", type=int, nargs="+", default=[256, 1024])
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(
        f"d_model {args.d_model}, batch {args.batch}, {args.threads} thread(s), {device}, torch {torch.__version__}; "
        f"median of {args.repeats} after {args.warmup} warm-ups"
    )
    print(f"{'mixer':<18} {'params':>8} " + " ".join(f"{f'T={T} ms':>11} {'x attn':>7}" for T in args.lengths))
    rows: dict[str, list[float]] = {}
    for name in ["attention", *MIXER_NAMES]:
        torch.manual_seed(0)
        mixer = build(name, args.d_model).to(device)
        params = sum(p.numel() for p in mixer.parameters())
        rows[name] = [
            step_seconds(mixer, torch.randn(args.batch, T, args.d_model, device=device), args.warmup, args.repeats)
            for T in args.lengths
        ]
        cells = " ".join(f"{1e3 * s:11.1f} {s / ref:7.2f}" for s, ref in zip(rows[name], rows["attention"]))
        print(f"{name:<18} {params:8d} {cells}", flush=True)
    print("load average (1, 5, 15 min): " + " ".join(f"{x:.2f}" for x in os.getloadavg()))


if __name__ == "__main__":
    main()
