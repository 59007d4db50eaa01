"""Transformer backbone: a bidirectional encoder, or decoder-only (causal) when the task is causal.

The task decides: ``spec.causal`` turns on the causal mask, so the same config runs as a
GPT-style decoder on copy/adding and as a BERT-style encoder on non-causal tasks. The
residual blocks and norm placement (post / pre / rezero / none) come from ``models.blocks``.
Inputs arrive from the shared ``InputEncoder`` as (B, T, d_in) and are projected to
``d_model`` when the widths differ (one-hot tokens, real-valued channels).
"""
from __future__ import annotations

from typing import Literal

from torch import nn

from seqbench.bench.core.registry import MODELS
from seqbench.models.base import Backbone
from seqbench.models.blocks import PositionalEncoding, TransformerFields, TransformerStack, valid_mask


class TransformerConfig(TransformerFields):
    name: Literal["transformer"] = "transformer"


@MODELS.register("transformer", config=TransformerConfig)
class Transformer(Backbone):
    """Transformer encoder, causal (decoder-only) when the task is causal; post/pre/rezero norms."""

    def __init__(self, cfg: TransformerConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        d = cfg.d_model
        self.proj = nn.Identity() if d_in == d else nn.Linear(d_in, d)
        self.pos = PositionalEncoding(cfg.pos_encoding, d, cfg.max_len)
        self.drop = nn.Dropout(cfg.dropout)
        self.stack = TransformerStack(cfg)
        self.causal = spec.causal
        self.d_out = d

    def forward(self, x, lengths=None, state=None):
        h = self.drop(self.pos(self.proj(x)))  # (B, T, d_model)
        h = self.stack(h, valid=valid_mask(lengths, x.shape[1], x.device), causal=self.causal)
        return h, state
