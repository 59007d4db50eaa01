"""Shared Transformer pieces: norms, residual placement, attention, positions, layer stacks.

``Residual`` is the one place where norm placement lives (``norm_position``):

- ``post``: ``x = norm(x + f(x))`` after each sublayer (Vaswani et al. 2017). Gradients
  near the output are large at init, hence the warmup folklore (Xiong et al. 2020).
- ``pre``: ``x = x + f(norm(x))``; the stack ends with a final norm (``TransformerStack``).
- ``rezero``: ``x = x + alpha * f(x)`` with a learnable scalar ``alpha = 0`` at init, no
  norm at all: every block is the identity at initialisation (Bachlechner et al. 2020).
- ``none``: ``x = x + f(x)``.

Attention goes through ``F.scaled_dot_product_attention`` so GPUs get the fused kernels.

``pos_encoding`` is where the order of the sequence comes from (``split_positions``):

- ``sinusoidal`` (Vaswani et al. 2017) and ``learned`` tables are added to the inputs;
- ``rope`` (Su et al. 2021, RoFormer) rotates each head's queries and keys by their positions,
  so a score q_i·k_j depends on i - j only;
- ``alibi`` (Press, Smith & Lewis 2022) adds -m_h·(i - j) to head h's scores, slopes
  m_h = 2^(-8h/H) (``alibi_slopes``); bidirectional (non-causal) attention gets the
  symmetric -m_h·|i - j|, since the paper defines only the causal case;
- ``none`` (NoPE, Kazemnejad et al. 2023): a causal decoder still orders the sequence through
  its mask (position t sees t + 1 keys); a bidirectional encoder is then a bag of tokens.

``rope`` and ``alibi`` act inside self-attention, add nothing at the input and extend to any
length (no table): only attention can take them.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from seqbench.models.configs.base import Dropout, Layers, ModelConfig

NormPosition = Literal["post", "pre", "rezero", "none"]
NormKind = Literal["layernorm", "rmsnorm"]
PosEncoding = Literal["sinusoidal", "learned", "rope", "alibi", "none"]
IN_ATTENTION = ("rope", "alibi")  # act on queries, keys or scores inside self-attention


def split_positions(kind: str) -> tuple[str, str]:
    """``kind`` as (what is added at the input, what self-attention applies): sinusoidal and learned
    at the input, rope and alibi in attention, none in neither ("none" fills the unused slot)."""
    return ("none", kind) if kind in IN_ATTENTION else (kind, "none")


def alibi_slopes(n_heads: int) -> list[float]:
    """ALiBi's per-head slopes, the authors' ``get_slopes`` (github.com/ofirpress/attention_with_linear_biases,
    fairseq/models/transformer.py): 2^(-8h/H) for h = 1..H when H is a power of two (paper Sec. 3); otherwise
    the slopes of the largest power of two below H, then every other slope of the next power of two."""

    def power_of_2(n: int) -> list[float]:
        return [2 ** (-8 * h / n) for h in range(1, n + 1)]

    if math.log2(n_heads).is_integer():
        return power_of_2(n_heads)
    below = 2 ** math.floor(math.log2(n_heads))
    return power_of_2(below) + power_of_2(2 * below)[0::2][: n_heads - below]


def rope_problem(d_model: int, n_heads: int, heads_field: str = "model.n_heads") -> str | None:
    """Why rope cannot rotate heads of width d_model / n_heads (it rotates pairs of channels), or None."""
    width = d_model // n_heads
    if width % 2 == 0:
        return None
    ok = [h for h in range(1, min(d_model, 16) + 1) if d_model % h == 0 and (d_model // h) % 2 == 0]
    fix = f"set {heads_field} to one of {ok}" if ok else "make model.d_model even"
    return (
        f"model.pos_encoding: rope rotates pairs of channels, but a head has d_model/n_heads = {width}; "
        f"{fix} or choose sinusoidal, learned, alibi or none"
    )


class TransformerFields(ModelConfig):
    """Knobs shared by the ``transformer`` backbone and ``transformer_seq2seq``."""

    n_layers: Layers = 1
    dropout: Dropout = 0.0
    n_heads: int = Field(4, ge=1, description="attention heads; must divide d_model")
    d_ff: int | None = Field(None, ge=1, description="feed-forward width; null = 4 * d_model")
    norm_position: NormPosition = Field(
        "pre", description="residual placement: post (original), pre (+ final norm), rezero (alpha=0), none"
    )
    norm: NormKind = Field("layernorm", description="normalisation layer used by post/pre placement")
    pos_encoding: PosEncoding = Field(
        "sinusoidal",
        description="position signal: sinusoidal or learned added at the input, rope or alibi inside "
        "attention, none (NoPE); all but learned extend to lengths longer than training",
    )
    max_len: int = Field(2048, ge=1, description="positions a learned encoding has (longer inputs are refused)")

    def max_positions(self) -> int | None:
        return self.max_len if self.pos_encoding == "learned" else None

    @model_validator(mode="after")
    def _heads_divide(self):
        if self.d_model % self.n_heads:
            ok = [h for h in range(1, min(self.d_model, 16) + 1) if self.d_model % h == 0]
            raise ValueError(
                f"model.n_heads: {self.n_heads} does not divide model.d_model={self.d_model}; "
                f"set model.n_heads to one of {ok} or change model.d_model"
            )
        return self

    @model_validator(mode="after")
    def _rope_pairs(self):
        problem = rope_problem(self.d_model, self.n_heads) if self.pos_encoding == "rope" else None
        if problem:
            raise ValueError(problem)
        return self

    def ff_width(self) -> int:
        return self.d_ff or 4 * self.d_model


def transformer_layer_macs(d: int, d_ff: int, T: int, keys: int) -> int:
    """MACs of one self-attention layer over T queries and ``keys`` keys: q, k, v, out
    projections (4 d^2), the two feed-forward products (2 d d_ff), scores and weighted sum
    (2 * keys * d per query; causal masks are not halved). Rope's rotations and alibi's biases are
    elementwise (O(T·d) and O(T·keys) per layer, no products): they add no MACs here, nor in
    FlopCounterMode's count."""
    return T * (4 * d * d + 2 * d * d_ff) + 2 * T * keys * d
