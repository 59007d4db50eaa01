"""``mamba``: the selective state-space model of Gu & Dao 2023 (Sec. 3.2, Algorithm 2; the block of
Fig. 3), one block without its own norm or residual (the stack puts those around every mixer).

Per channel of the inner width ``E * d_model`` the recurrence is ``h_t = exp(Δ_t A) h_{t-1} +
Δ_t B_t x_t``, ``y_t = C_t · h_t + D x_t``, where Δ, B and C are computed from the input at every
position (the "selection" of Sec. 3.2), so the state can keep or drop a token depending on its
content; A is diagonal with the S4D-Real initialisation ``A_n = -(n + 1)``.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.mixer import MixerConfig


@MIXERS.config("mamba")
class MambaConfig(MixerConfig):
    """Mamba: selective SSM, input-dependent Δ, B, C and a parallel scan (Gu & Dao 2023)."""

    name: Literal["mamba"] = "mamba"
    # in/out projections (d x E·d) and the scan's E·d·N state updates at every position
    complexity = ("O(T·E·d·(d + N))", 1)

    d_state: int = Field(
        16,
        ge=1,
        description="state size N per inner channel (the paper's 16): how much of the past one channel can hold",
    )
    expand: int = Field(2, ge=1, description="inner width E * d_model of the block (the paper's E = 2)")
    d_conv: int = Field(
        4,
        ge=1,
        description="taps of the short causal depthwise convolution before the SSM "
        "(the paper's 4): local context the selection sees",
    )
    dt_rank: int | Literal["auto"] = Field(
        "auto",
        description="rank (>= 1) of the low-rank projection that computes Δ; auto = ceil(d_model / 16), the paper's",
    )

    @field_validator("dt_rank")
    @classmethod
    def _positive_rank(cls, v: int | str) -> int | str:
        # a bound on the int member alone (ge=1 would be tried on "auto" too)
        if isinstance(v, int) and v < 1:
            raise ValueError(f"{v}: the rank of Δ's projection must be >= 1, or auto")
        return v

    def rank(self, d_model: int) -> int:
        return math.ceil(d_model / 16) if self.dt_rank == "auto" else self.dt_rank

    def forward_macs(self, d_model: int, T: int) -> int:
        """Products of one block over ``T`` positions: the in projection to the x and z branches, the
        x projection to (Δ, B, C), Δ back to the inner width, ``C_t · h_t`` (a contraction over the
        state), the out projection, and the depthwise convolution. The scan's updates are
        element-wise and not counted (bench/training/flops.py)."""
        d, di, n, r, k = d_model, self.expand * d_model, self.d_state, self.rank(d_model), self.d_conv
        per_position = d * 2 * di + di * (r + 2 * n) + r * di + di * n + di * d
        # mambapy's Conv1d pads k - 1 on both sides and drops the last k - 1 outputs: it computes T + k - 1
        conv = (T + k - 1) * k * di
        return T * per_position + conv
