"""``attention`` mixer: the Transformer's self-attention layer (``models/blocks.py``) behind the mixer
interface. Config: ``models/configs/attention.py``."""

from __future__ import annotations

import torch

from seqbench.bench.core.registry import MIXERS
from seqbench.models.blocks import Attention
from seqbench.models.configs.attention import AttentionConfig  # noqa: F401  (the config, beside its module)


@MIXERS.module("attention")
class AttentionMixer(Attention):
    """Multi-head self-attention, a ``Mixer`` (``models/configs/mixer.py``); ``causal``: position t attends
    to positions <= t, else to all; ``positions``: rope or alibi inside attention (the stack's
    ``model.pos_encoding``), or none."""

    def __init__(self, d_model: int, n_heads: int = 4, *, causal: bool = True, positions: str = "none"):
        super().__init__(d_model, n_heads, dropout=0.0, positions=positions)
        self.causal = causal

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:  # type: ignore[override]
        """x (B, T, d); valid (B, T) bool, False at padding (keys there are ignored)."""
        return super().forward(x, key_valid=valid, causal=self.causal)
