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

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.models.base import Backbone, SequenceModel, input_width
from seqbench.models.blocks import (PositionalEncoding, TransformerFields, TransformerStack, transformer_layer_macs,
                                    valid_mask)


class TransformerConfig(TransformerFields):
    name: Literal["transformer"] = "transformer"
    complexity = ("O(T²·d + T·d²)", 2)  # all pairs of positions, then per-position products

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int:
        d, d_in = self.d_model, input_width(self, spec.vocab_size, spec.input_dim)
        proj = T * d_in * d if d_in != d else 0  # one-hot tokens or real channels projected to d_model
        layers = self.n_layers * transformer_layer_macs(d, self.ff_width(), T, T)
        return proj + layers + SequenceModel.head_macs(spec, d, T)


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
