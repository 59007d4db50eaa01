"""Transformer backbone: a bidirectional encoder, or decoder-only (causal) when the task is causal.

The config (no torch) is in ``models/configs/transformer.py``, where the family is documented."""

from __future__ import annotations

from torch import nn

from seqbench.bench.core.registry import MODELS
from seqbench.models.base import Backbone
from seqbench.models.blocks import PositionalEncoding, TransformerStack, split_positions, valid_mask
from seqbench.models.configs.transformer import TransformerConfig  # the configs, re-exported beside their modules


@MODELS.module("transformer")
class Transformer(Backbone):
    def __init__(self, cfg: TransformerConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        d = cfg.d_model
        self.proj = nn.Identity() if d_in == d else nn.Linear(d_in, d)
        # what is added at the input; rope and alibi reach the attention layers (TransformerLayer)
        self.pos = PositionalEncoding(split_positions(cfg.pos_encoding)[0], d, cfg.max_len)
        self.drop = nn.Dropout(cfg.dropout)
        self.stack = TransformerStack(cfg)
        self.causal = spec.causal
        self.d_out = d
        if cfg.init == "xavier":
            self.xavier_()

    def xavier_(self) -> None:
        """Xavier-uniform weights and zero biases on every linear layer of the backbone; the fused
        key/value projection (2d, d) gets it per d x d block, as two separate layers would."""
        d = self.cfg.d_model
        for m in self.modules():
            if isinstance(m, nn.Linear):
                blocks = (
                    m.weight.data.split(d, dim=0)
                    if m.out_features == 2 * d and m.in_features == d
                    else (m.weight.data,)
                )
                for w in blocks:
                    nn.init.xavier_uniform_(w)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x, lengths=None, state=None):
        h = self.drop(self.pos(self.proj(x)))  # (B, T, d_model)
        h = self.stack(h, valid=valid_mask(lengths, x.shape[1], x.device), causal=self.causal)
        return h, state
