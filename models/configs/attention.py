"""``attention``: softmax multi-head self-attention as a mixer (Vaswani et al. 2017, Sec. 3.2), causal
on causal tasks; the same layer as the Transformer's (``models/blocks.py`` ``Attention``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from seqbench.bench.core.registry import MIXERS
from seqbench.models.configs.mixer import MixerConfig, heads_divide_width


@MIXERS.config("attention")
class AttentionConfig(MixerConfig):
    """Softmax multi-head self-attention (Vaswani et al. 2017); path length 1, O(T²) pairs."""

    name: Literal["attention"] = "attention"
    complexity = ("O(T²·d + T·d²)", 2)  # all pairs of positions, then per-position projections
    needs_positions = True
    inner_positions = frozenset({"rope", "alibi"})  # model.pos_encoding=rope|alibi: models/blocks.py Attention
    n_heads: int = Field(4, ge=1, description="attention heads; must divide d_model")

    _heads_divide = field_validator("n_heads", mode="after")(heads_divide_width)

    def forward_macs(self, d_model: int, T: int) -> int:
        """q, k, v and output projections (4 d^2 per position), scores and weighted sum (2 T d per
        position; causal masks are not halved), as ``transformer_layer_macs`` counts them; rope and alibi
        are elementwise and add none."""
        return T * 4 * d_model * d_model + 2 * T * T * d_model
