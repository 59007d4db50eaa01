"""A plug-in mixer for tests/bench/commands/test_probe.py: mixes nothing across time, so its stack is memoryless and can
solve no probe that needs the past (the card must then say "below the first rung")."""

from __future__ import annotations

import torch
from torch import nn


class NoMixing(nn.Module):
    """Position-wise only: each position sees its own token and nothing else."""

    def __init__(self, d_model: int):
        super().__init__()
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)  # (B, T, d_model), no position sees another
