"""Transformer backbone: a bidirectional encoder, or decoder-only (causal) when the task is causal.

The task decides: ``spec.causal`` turns on the causal mask, so the same config runs as a
GPT-style decoder on copy/adding and as a BERT-style encoder on non-causal tasks. The
residual blocks and norm placement (post / pre / rezero / none) come from ``models.blocks``.
Inputs arrive from the shared ``InputEncoder`` as (B, T, d_in) and are projected to
``d_model`` when the widths differ (one-hot tokens, real-valued channels).
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.bench.core.schema import ADDED_LATER
from seqbench.models.base import head_macs, input_width
from seqbench.models.blocks import TransformerFields, transformer_layer_macs


@MODELS.config("transformer")
class TransformerConfig(TransformerFields):
    """Transformer encoder, causal (decoder-only) when the task is causal; post/pre/rezero norms."""

    name: Literal["transformer"] = "transformer"
    complexity = ("O(T²·d + T·d²)", 2)  # all pairs of positions, then per-position products
    # ADDED_LATER: at "default" the config hash is the one runs recorded before the field existed.
    init: Literal["default", "xavier"] = Field(
        "default", description="linear layers at init: PyTorch's kaiming-uniform (a=sqrt(5), variance x~1/3 "
        "per layer) or Xavier-uniform with zero bias (fairseq, Xiong et al. 2020; q, k, v each on its own)",
        json_schema_extra=ADDED_LATER)

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int:
        d, d_in = self.d_model, input_width(self, spec.vocab_size, spec.input_dim)
        proj = T * d_in * d if d_in != d else 0  # one-hot tokens or real channels projected to d_model
        layers = self.n_layers * transformer_layer_macs(d, self.ff_width(), T, T)
        return proj + layers + head_macs(spec, d, T)


# -- torch below: the modules. Everything above imports without torch (bench/core/configs_only.py).
from torch import nn

from seqbench.models.base import Backbone
from seqbench.models.blocks import PositionalEncoding, TransformerStack, valid_mask


@MODELS.module("transformer")
class Transformer(Backbone):
    def __init__(self, cfg: TransformerConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        d = cfg.d_model
        self.proj = nn.Identity() if d_in == d else nn.Linear(d_in, d)
        self.pos = PositionalEncoding(cfg.pos_encoding, d, cfg.max_len)
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
                blocks = m.weight.data.split(d, dim=0) if m.out_features == 2 * d and m.in_features == d \
                    else (m.weight.data,)
                for w in blocks:
                    nn.init.xavier_uniform_(w)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, x, lengths=None, state=None):
        h = self.drop(self.pos(self.proj(x)))  # (B, T, d_model)
        h = self.stack(h, valid=valid_mask(lengths, x.shape[1], x.device), causal=self.causal)
        return h, state
