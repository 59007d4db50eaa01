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
from seqbench.models.configs.base import head_macs, input_width
from seqbench.models.configs.blocks import TransformerFields, transformer_layer_macs


@MODELS.config("transformer")
class TransformerConfig(TransformerFields):
    """Transformer, decoder-only on causal tasks; post/pre/rezero norms; sinusoidal/learned/rope/alibi/no positions."""

    name: Literal["transformer"] = "transformer"
    complexity = ("O(T²·d + T·d²)", 2)  # all pairs of positions, then per-position products
    # ADDED_LATER: at "default" the config hash is the one runs recorded before the field existed.
    init: Literal["default", "xavier"] = Field(
        "default",
        description="linear layers at init: PyTorch's kaiming-uniform (a=sqrt(5), variance x~1/3 "
        "per layer) or Xavier-uniform with zero bias (fairseq, Xiong et al. 2020; q, k, v each on its own)",
        json_schema_extra=ADDED_LATER,
    )

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int:
        d, d_in = self.d_model, input_width(self, spec.vocab_size, spec.input_dim)
        proj = T * d_in * d if d_in != d else 0  # one-hot tokens or real channels projected to d_model
        layers = self.n_layers * transformer_layer_macs(d, self.ff_width(), T, T)
        return proj + layers + head_macs(spec, d, T)
