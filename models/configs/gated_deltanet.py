"""``gated_deltanet``: Gated DeltaNet (Yang, Kautz & Hatamizadeh 2025, "Gated Delta Networks:
Improving Mamba2 with Delta Rule", Sec. 3), the layer of flash-linear-attention's ``GatedDeltaNet``.

Per head the state S (K x V, a key-to-value memory) follows the gated delta rule (eq. 10)

    S_t = α_t (I - β_t k_t k_tᵀ) S_{t-1} + β_t k_t v_tᵀ,   o_t = S_tᵀ q_t / √K

with k and q L2-normalised: before writing v_t under key k_t the state first erases what it held
under k_t (the delta rule, a step of online regression), and the whole memory decays by the scalar
α_t = exp(-exp(A_log)·softplus(a_t + dt_bias)) in (0, 1) (Mamba-2's gate). The writing strength is
β_t = sigmoid(b_t) in (0, 1); with ``allow_neg_eigval`` it is 2·sigmoid(b_t) in (0, 2) (Grazzi et al.
2025, "Unlocking State-Tracking in Linear RNNs Through Negative Eigenvalues"), so the transition's
eigenvalue along k_t, α_t (1 - β_t), ranges over (-1, 1) instead of (0, 1): a reflection, which a
linear recurrence needs to track parity or a permutation (its other eigenvalues are α_t).

The layer (fla ``fla/layers/gated_deltanet.py``): q, k, v projections each through a short causal
depthwise convolution and SiLU; a and b projections to one scalar per head; the rule above in chunks
(the WY form of Yang et al. 2024, "Parallelizing Linear Transformers with the Delta Rule", Sec. 3);
an output gate with RMSNorm, ``rmsnorm(o)·w·silu(g)``; the output projection.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.mamba2 import chunking
from seqbench.models.configs.mixer import MixerConfig, heads_divide_width, heads_problem

# Positions per chunk of the chunked form (fla's kernels use 64). Per position and head a chunk costs
# about Q·(3K + V) MACs inside it and a triangular solve of Q·(K + V)/2, plus K·V per chunk for the state;
# 16, 32 and 64 took about the same time on one CPU thread (d_model 64, T 256-2048, benchmarks/mixers.py,
# within a shared machine's noise); 32 halves the solve's work of 64.
CHUNK = 32


@MIXERS.config("gated_deltanet")
class GatedDeltaNetConfig(MixerConfig):
    """Gated DeltaNet: delta rule with a Mamba-2 decay gate, chunked WY form (Yang et al. 2025)."""

    name: Literal["gated_deltanet"] = "gated_deltanet"
    # projections (d·(d + E_v·d) per position) and per head a chunk's Q·(K + V) plus the K x V state
    complexity = ("O(T·d·(d + Q + E_v·d/H))", 1)

    n_heads: int = Field(
        2,
        ge=1,
        description="heads, each with a K x V state, K = d_model/n_heads keys by V = expand_v·K values; "
        "must divide d_model",
    )
    expand_v: int = Field(
        1,
        ge=1,
        description="value width per head over key width: a wider memory per key; fla's default is 2, 1 keeps "
        "a CPU step near attention's at T = 256 (parameters 5·d² instead of 8·d²)",
    )
    d_conv: int = Field(
        4, ge=1, description="taps of the short causal depthwise convolutions on q, k and v (fla's conv_size 4)"
    )
    allow_neg_eigval: bool = Field(
        False,
        description="β = 2·sigmoid instead of sigmoid, so the transition's eigenvalues lie in (-1, 1) "
        "rather than (0, 1) (Grazzi et al. 2025): what parity and permutation tracking need",
    )

    _heads_divide = field_validator("n_heads", mode="after")(heads_divide_width)

    def solve_macs(self, d_model: int, T: int) -> int:
        """The part of ``forward_macs`` in triangular solves (``torch.linalg.solve_triangular``, which
        FlopCounterMode does not count): per head and chunk, forward substitution through a unit lower
        triangular Q x Q matrix for K + V columns, Q·(Q - 1)/2 MACs a column."""
        H, K = self.n_heads, d_model // self.n_heads
        chunks, Q = chunking(T, CHUNK)
        return H * chunks * Q * (Q - 1) // 2 * (K + self.expand_v * K)

    def conv_macs(self, d_model: int, T: int) -> int:
        """The part of ``forward_macs`` in the causal depthwise convolutions on q, k and v: ``d_conv`` MACs per
        channel and position (run as shifted multiply-adds, which FlopCounterMode does not see)."""
        return T * self.d_conv * (2 * d_model + self.expand_v * d_model)

    def forward_macs(self, d_model: int, T: int) -> int:
        """q, k, v, gate, a and b projections, the depthwise convolutions on q, k and v, the output
        projection, and per head the chunked rule (``models/gated_deltanet.py``, ``gated_delta_chunked``):
        per chunk of Q positions k kᵀ and q kᵀ (Q·Q·K each), the triangular solve (``solve_macs``) and
        the scores times the new values (Q·Q·V); with n > 1 chunks, each chunk but the last adds
        kᵀ u to the state (K·Q·V), chunks 1 .. n - 2 carry it through their transition (K·Q·K to form
        it, K·K·V to apply it), and chunks 1 .. n - 1 read it (Q·Q·K and Q·K·V). T is padded to whole
        chunks; decays, gates, norms and β are element-wise. This is the chunked form's count (the GPU
        kernel's too); the CPU kernel runs the rule step by step instead, about 3·H·K·V MACs a position
        (``models/gated_deltanet.py``), fewer than the chunked form's at the defaults."""
        problem = heads_problem(d_model, self.n_heads)
        if problem:
            raise ValueError(f"model.mixer_args.n_heads: {problem}")
        d, H, K = d_model, self.n_heads, d_model // self.n_heads
        V = self.expand_v * K
        projections = T * (d * (2 * H * K + 2 * H * V + 2 * H) + H * V * d) + self.conv_macs(d_model, T)
        n, Q = chunking(T, CHUNK)
        inside = n * (2 * Q * Q * K + Q * Q * V)
        across = (n - 1) * (K * Q * V + Q * Q * K + Q * K * V) + max(n - 2, 0) * (K * Q * K + K * K * V)
        return projections + H * (inside + across) + self.solve_macs(d_model, T)
