"""Shared Transformer pieces: norms, residual placement, attention, positions, layer stacks.

``Residual`` is the one place where norm placement lives (``norm_position``):

- ``post``: ``x = norm(x + f(x))`` after each sublayer (Vaswani et al. 2017). Gradients
  near the output are large at init, hence the warmup folklore (Xiong et al. 2020).
- ``pre``: ``x = x + f(norm(x))``; the stack ends with a final norm (``TransformerStack``).
- ``rezero``: ``x = x + alpha * f(x)`` with a learnable scalar ``alpha = 0`` at init, no
  norm at all: every block is the identity at initialisation (Bachlechner et al. 2020).
- ``none``: ``x = x + f(x)``.

Attention goes through ``F.scaled_dot_product_attention`` so GPUs get the fused kernels.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from seqbench.models.configs.base import Dropout, Layers, ModelConfig

NormPosition = Literal["post", "pre", "rezero", "none"]
NormKind = Literal["layernorm", "rmsnorm"]


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
    pos_encoding: Literal["sinusoidal", "learned", "none"] = Field(
        "sinusoidal", description="position signal; sinusoidal extends to lengths longer than training"
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

    def ff_width(self) -> int:
        return self.d_ff or 4 * self.d_model


def transformer_layer_macs(d: int, d_ff: int, T: int, keys: int) -> int:
    """MACs of one self-attention layer over T queries and ``keys`` keys: q, k, v, out
    projections (4 d^2), the two feed-forward products (2 d d_ff), scores and weighted sum
    (2 * keys * d per query; causal masks are not halved)."""
    return T * (4 * d * d + 2 * d * d_ff) + 2 * T * keys * d
