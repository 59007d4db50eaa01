"""``mamba2``: the Mamba-2 block of Dao & Gu 2024 ("Transformers are SSMs", Sec. 7, Fig. 6), one block
without its own residual (the stack puts the norm and residual around every mixer).

The state-space recurrence of SSD (state-space duality, Sec. 3-6) per head ``h`` of width P:

    H_t = a_t · H_{t-1} + x_t B_tᵀ,   y_t = H_t C_t + D·x_t,   a_t = exp(Δ_t A) in (0, 1)

where A < 0 is one scalar per head (Mamba-1's A is diagonal: one decay per channel and state), the
step Δ_t = softplus(dt_t + dt_bias) is computed from the input per head, and B_t, C_t (width N) are
computed from the input and shared by all heads (``ngroups = 1``). Because the decay is a scalar,
the map from x to y over a chunk of Q positions is one masked matrix, ``(C Bᵀ ∘ L) x`` with
``L_ij = exp(Σ_{j<s≤i} Δ_s A)`` (Sec. 6): a chunk is computed with matrix products and only the
states between chunks run sequentially (the "minimal SSD" reference, ``ssd_minimal_discrete``).

The block (Sec. 7.1): one input projection to (z, x, B, C, dt); a short causal depthwise convolution
and SiLU over (x, B, C) together; the SSM; a gated RMSNorm ``norm(y · silu(z))``; the output projection.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, ValidationInfo, model_validator

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.mixer import MixerConfig

# Positions per chunk of the SSD form. Per position a chunk costs Q·(N + E·d) MACs inside it (C Bᵀ is
# shared by the heads, the masked product per head) and 2·E·d·N for the states, whatever Q: smaller
# chunks do fewer MACs but more, smaller products. 32 and 64 took about the same time on one CPU thread
# (d_model 64, T 256-8192, benchmarks/mixers.py, within a shared machine's noise), 128 and 256 longer at
# T = 256. mamba_ssm's kernel uses 256 on a GPU.
CHUNK = 64


def chunking(T: int, chunk: int = CHUNK) -> tuple[int, int]:
    """(chunks, positions per chunk) at length T: one chunk of T positions up to ``chunk``, else chunks
    of ``chunk`` positions, the last padded."""
    return (1, T) if T <= chunk else (math.ceil(T / chunk), chunk)


def inner_heads_problem(d_inner: int, n_heads: int) -> str | None:
    """Why ``n_heads`` cannot split the inner width ``expand·d_model`` (naming the fix), or None."""
    if d_inner % n_heads == 0:
        return None
    ok = [h for h in range(1, min(d_inner, 16) + 1) if d_inner % h == 0]
    return (
        f"{n_heads} does not divide the inner width expand·d_model = {d_inner}; choose from {ok} "
        "or change model.mixer_args.expand"
    )


@MIXERS.config("mamba2")
class Mamba2Config(MixerConfig):
    """Mamba-2: SSD, a scalar input-dependent decay per head, chunked matrix form (Dao & Gu 2024)."""

    name: Literal["mamba2"] = "mamba2"
    # projections (E·d·(d + N) per position) and the chunked SSD: Q·(N + E·d) inside a chunk, 2·E·d·N for the states
    complexity = ("O(T·E·d·(d + N + Q))", 1)

    d_state: int = Field(
        16,
        ge=1,
        description="state size N of B and C, shared by the heads (each head holds a P x N state); the paper "
        "uses 64-256 on a GPU, 16 (Mamba-1's) keeps a CPU step near attention's at T = 256",
    )
    expand: int = Field(2, ge=1, description="inner width E * d_model of the block (the paper's E = 2)")
    n_heads: int = Field(
        2,
        ge=1,
        description="heads of the inner width, each with its own decay A and step Δ; must divide E·d_model "
        "(head width P = E·d_model/n_heads: 64, the paper's, at d_model 64)",
    )
    d_conv: int = Field(
        4, ge=1, description="taps of the short causal depthwise convolution over x, B and C (the paper's 4)"
    )

    @model_validator(mode="after")
    def _heads_divide_inner_width(self, info: ValidationInfo) -> Mamba2Config:
        d = (info.context or {}).get("d_model")
        problem = inner_heads_problem(self.expand * d, self.n_heads) if d else None
        if problem:
            raise ValueError(f"model.mixer_args.n_heads: {problem}")
        return self

    def conv_macs(self, d_model: int, T: int) -> int:
        """The part of ``forward_macs`` in the causal depthwise convolution over (x, B, C): ``d_conv`` MACs per
        channel and position (run as shifted multiply-adds, which FlopCounterMode does not see)."""
        return T * self.d_conv * (self.expand * d_model + 2 * self.d_state)

    def forward_macs(self, d_model: int, T: int) -> int:
        """The in projection to (z, x, B, C, dt), the depthwise convolution over (x, B, C), the output
        projection, and the chunked SSD (``models/mamba2.py``, ``ssd_chunked``): per chunk of Q positions
        C Bᵀ (Q·Q·N, shared by the heads), the masked product with x (H·Q·Q·P) and, with more than one
        chunk, each chunk's state Xᵀ B (H·P·Q·N) and the outputs from the state before it (H·Q·N·P).
        T is padded to whole chunks; the decays, the gate and the norm are element-wise. This is the chunked
        form's count (the GPU kernels' too); the CPU kernel runs the recurrence instead, about 3·H·P·N MACs a
        position (``models/mamba2.py``), fewer than the chunked form's at the defaults."""
        problem = inner_heads_problem(self.expand * d_model, self.n_heads)
        if problem:
            raise ValueError(f"model.mixer_args.n_heads: {problem}")
        d, di, n, H = d_model, self.expand * d_model, self.d_state, self.n_heads
        P = di // H
        projections = T * (d * (2 * di + 2 * n + H) + di * d) + self.conv_macs(d_model, T)
        chunks, Q = chunking(T)
        inside = chunks * (Q * Q * n + H * Q * Q * P)
        across = 2 * chunks * H * Q * n * P if chunks > 1 else 0
        return projections + inside + across
