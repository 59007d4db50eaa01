"""Temporal convolutional network: causal dilated residual convolutions.

The config (no torch) is in ``models/configs/tcn.py``, where the family is documented."""

from __future__ import annotations

import warnings

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm as apply_weight_norm

from seqbench.bench.core.registry import MODELS
from seqbench.models.base import Backbone
from seqbench.models.configs.tcn import (  # the configs, re-exported beside their modules
    ReceptiveFieldWarning,
    TCNConfig,
)


class CausalConv(nn.Module):
    def __init__(self, d_in: int, d_out: int, k: int, dilation: int, wn: bool):
        super().__init__()
        self.pad = (k - 1) * dilation
        conv = nn.Conv1d(d_in, d_out, k, dilation=dilation)
        self.conv = apply_weight_norm(conv) if wn else conv

    def forward(self, x: torch.Tensor) -> torch.Tensor:  # (B, C, T) -> (B, C', T)
        return self.conv(F.pad(x, (self.pad, 0)))


class TemporalBlock(nn.Module):
    def __init__(self, d_in: int, d: int, k: int, dilation: int, dropout: float, wn: bool):
        super().__init__()
        self.net = nn.Sequential(
            CausalConv(d_in, d, k, dilation, wn),
            nn.ReLU(),
            nn.Dropout(dropout),
            CausalConv(d, d, k, dilation, wn),
            nn.ReLU(),
            nn.Dropout(dropout),
        )
        self.skip = nn.Conv1d(d_in, d, 1) if d_in != d else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.net(x) + self.skip(x))


@MODELS.module("tcn")
class TCN(Backbone):
    cfg: TCNConfig

    def __init__(self, cfg: TCNConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        self.blocks = nn.Sequential(
            *(
                TemporalBlock(
                    d_in if i == 0 else cfg.d_model, cfg.d_model, cfg.kernel_size, 2**i, cfg.dropout, cfg.weight_norm
                )
                for i in range(cfg.n_levels)
            )
        )
        self.d_out = cfg.d_model
        if spec.dependency > self.receptive_field:
            warnings.warn(
                f"tcn: receptive field {self.receptive_field} < task dependency {spec.dependency}; "
                f"the task is unsolvable as configured; raise model.n_levels or model.kernel_size",
                ReceptiveFieldWarning,
                stacklevel=2,
            )

    @property
    def receptive_field(self) -> int:
        return self.cfg.receptive_field()

    def forward(self, x, lengths=None, state=None):
        # Causal convs: right padding never reaches valid steps, so lengths need no mask.
        h = self.blocks(x.transpose(1, 2))  # (B, d_model, T)
        return h.transpose(1, 2), state  # (B, T, d_model)
