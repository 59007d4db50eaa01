"""``linear_attention``: kernelised attention (Katharopoulos et al. 2020, "Transformers are RNNs",
Sec. 3.2, eq. 4-6; causal form Sec. 3.3, eq. 8-10): ``softmax(q·k)`` is replaced by ``φ(q)·φ(k)``, so

    y_t = φ(q_t)ᵀ Σ_{j≤t} φ(k_j) v_jᵀ  /  φ(q_t)ᵀ Σ_{j≤t} φ(k_j)

costs O(T) in the sequence length. Two feature maps:

- ``elu``: φ(x) = elu(x) + 1 (Katharopoulos et al., Sec. 3.2.1);
- ``taylor``: Based (Arora et al. 2024, Sec. 3; Zoology's ``TaylorExp``), the second-order Taylor
  expansion of exp(q·k/√f): φ(x) = [1, x / f^(1/4), (x ⊗ x) / √(2f)], so φ(q)·φ(k) =
  1 + q·k/√f + (q·k)²/(2f); q and k are first projected to a small ``feature_dim`` f per head.

``short_conv`` (k taps, default 3; 0 = none) puts a causal depthwise convolution over the input before the q/k/v
projections, the short convolution Based pairs with its linear attention (Zoology's MQAR configurations
put a ``BaseConv`` with kernel 3 beside ``Based``; Arora et al. 2025, abstract, find that a short
convolution is what lets Mamba store a key with the value after it): without it a key-value pair in
two neighbouring positions must be joined by the feature map alone.

The causal form runs in chunks of ``CHUNK`` positions: quadratic inside a chunk, running sums of
φ(k) vᵀ across chunks (the chunked form of Yang et al. 2024, GLA Sec. 2.2, without gates), so every
product is a matrix product; ``forward_macs`` counts that form. On a CPU the module runs the same sums as
the recurrence of eq. 8-10 in C instead (``models/linear_attention.py``), with the Taylor features' f²
pairs kept once each (1 + f + f(f+1)/2 wide): 2·F·Dv products per position and head at any T.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, field_validator

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.mixer import MixerConfig, heads_divide_width, heads_problem

# Most positions per chunk of the causal form: one chunk up to T = 512 (its Taylor weights cost C·f per
# position, the sums across chunks 2·F·Dv: at f = 16 one chunk is the cheaper up to C ~ 500); small enough
# for memory (the weights of one chunk are B·H·C² numbers).
CHUNK = 512


def chunking(T: int) -> tuple[int, int]:
    """(chunks, positions per chunk) of the causal form at length T: as few chunks as CHUNK allows, of
    equal size, so padding to whole chunks adds fewer than one position per chunk."""
    n = math.ceil(T / CHUNK)
    return n, math.ceil(T / n)


@MIXERS.config("linear_attention")
class LinearAttentionConfig(MixerConfig):
    """Linear attention: elu+1 or Based's Taylor feature maps, running sums (Katharopoulos et al. 2020)."""

    name: Literal["linear_attention"] = "linear_attention"
    # F = the feature map's width: f (elu) or 1 + f + f² (taylor); per position d·F for the sums
    complexity = ("O(T·d·F)", 1)
    needs_positions = True  # φ(q)·φ(k) sees contents only: without positions the order is lost

    n_heads: int = Field(
        4, ge=1, description="heads, each with its own q/k features and running sums; must divide d_model"
    )
    feature_map: Literal["elu", "taylor"] = Field(
        "taylor",
        description="φ: elu (elu(x)+1, Katharopoulos et al.) or taylor (Based's 2nd-order Taylor "
        "approximation of exp(q·k), width 1 + f + f²)",
    )
    feature_dim: int = Field(
        16,
        ge=1,
        description="width f that q and k are projected to per head before φ (Based's 16): taylor's state grows as f²",
    )

    short_conv: int = Field(
        3,
        ge=0,
        description="taps of a causal depthwise convolution on the input "
        "before the projections (Based's short convolution, 3 as in Zoology's MQAR configs; "
        "0 = none, as in Katharopoulos et al.)",
    )

    _heads_divide = field_validator("n_heads", mode="after")(heads_divide_width)

    def feature_size(self) -> int:
        f = self.feature_dim
        return f if self.feature_map == "elu" else 1 + f + f * f

    def forward_macs(self, d_model: int, T: int) -> int:
        """The causal (chunked) form: q and k projections to H·f, v and out projections (d x d), then per
        head and chunk of C positions the scores (C·C·f for Taylor, whose weights are a polynomial of
        q·k; C·C·F as φ(Q)φ(K)ᵀ for elu), their weighted sum of values (C·C·Dv) and, when there is more
        than one chunk, the chunk's state φ(K)ᵀV (C·F·Dv) and the queries against the state before the
        chunk (C·F·Dv), where Dv = d/H + 1 (a column of ones carries the normaliser). T is padded to whole
        chunks. The short convolution, if any, adds T·d·taps. The bidirectional form (causal=False) costs
        2·H·T·F·Dv instead of the chunk terms."""
        problem = heads_problem(d_model, self.n_heads)
        if problem:
            raise ValueError(f"model.mixer_args.n_heads: {problem}")
        d, H, f, F = d_model, self.n_heads, self.feature_dim, self.feature_size()
        dv = d // H + 1
        n_chunks, C = chunking(T)
        projections = T * (2 * d * H * f + 2 * d * d + d * self.short_conv)
        scores = f if self.feature_map == "taylor" else F
        sums = 2 * F * dv if n_chunks > 1 else 0
        return projections + H * n_chunks * C * (C * scores + C * dv + sums)
