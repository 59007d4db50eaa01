"""Temporal convolutional network (Bai, Kolter & Koltun 2018).

``n_levels`` residual blocks; block i holds two causal Conv1d layers with dilation 2^i
(left padding only, so the output at t sees inputs <= t), each followed by ReLU and
dropout, with weight normalisation as in the paper. A 1x1 conv matches widths on the
residual path when the input width differs. The receptive field is

    1 + 2 * (kernel_size - 1) * (2^n_levels - 1)

steps; a task whose dependency is longer than that cannot be solved, and building the
model for such a task warns once.
"""
from __future__ import annotations

import warnings
from typing import Any, Literal

from pydantic import Field, model_validator

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.bench.core.text import Notice
from seqbench.models.base import Dropout, ModelConfig, head_macs, input_width


class ReceptiveFieldWarning(Notice):
    """The task's dependency is longer than the TCN can see."""


@MODELS.config("tcn")
class TCNConfig(ModelConfig):
    """Temporal convolutional network: causal dilated residual convolutions (Bai et al. 2018)."""

    name: Literal["tcn"] = "tcn"
    complexity = ("O(k·T·d²)", 1)  # k taps of d x d at every position, per level

    dropout: Dropout = 0.0
    kernel_size: int = Field(3, ge=2, description="taps per causal conv (the paper uses 2-8)")
    n_levels: int = Field(8, ge=1, description="residual blocks; block i has dilation 2^i")
    weight_norm: bool = Field(True, description="weight-normalise the convolutions (as Bai et al.)")

    @model_validator(mode="before")
    @classmethod
    def _depth_is_n_levels(cls, data: Any) -> Any:
        # Configs written before models declared their own fields carry the then-universal
        # n_layers: 1 (which meant nothing for a TCN): they still load. Any other value is refused.
        if isinstance(data, dict) and "n_layers" in data:
            if not (type(data["n_layers"]) is int and data["n_layers"] == 1):
                raise ValueError("model.n_layers: a tcn has no n_layers; its depth is model.n_levels (block i has "
                                 f"dilation 2^i); allowed: {', '.join(cls.model_fields)}")
            data = {k: v for k, v in data.items() if k != "n_layers"}
        return data

    def receptive_field(self) -> int:
        return receptive_field(self.kernel_size, self.n_levels)

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int:
        d, k = self.d_model, self.kernel_size
        total = 0
        for level in range(self.n_levels):
            c_in = input_width(self, spec.vocab_size, spec.input_dim) if level == 0 else d
            skip = c_in * d if c_in != d else 0  # 1x1 conv on the residual path
            total += T * (k * c_in * d + k * d * d + skip)
        return total + head_macs(spec, d, T)


def receptive_field(kernel_size: int, n_levels: int) -> int:
    """Steps of input one output sees: two convs per level, dilations 1, 2, ..., 2^(n-1)."""
    return 1 + 2 * (kernel_size - 1) * (2 ** n_levels - 1)


# -- torch below: the modules. Everything above imports without torch (bench/core/configs_only.py).
import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.parametrizations import weight_norm as apply_weight_norm

from seqbench.models.base import Backbone


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
        self.net = nn.Sequential(CausalConv(d_in, d, k, dilation, wn), nn.ReLU(), nn.Dropout(dropout),
                                 CausalConv(d, d, k, dilation, wn), nn.ReLU(), nn.Dropout(dropout))
        self.skip = nn.Conv1d(d_in, d, 1) if d_in != d else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.net(x) + self.skip(x))


@MODELS.module("tcn")
class TCN(Backbone):
    def __init__(self, cfg: TCNConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        self.blocks = nn.Sequential(*(
            TemporalBlock(d_in if i == 0 else cfg.d_model, cfg.d_model, cfg.kernel_size, 2 ** i,
                          cfg.dropout, cfg.weight_norm) for i in range(cfg.n_levels)))
        self.d_out = cfg.d_model
        if spec.dependency > self.receptive_field:
            warnings.warn(
                f"tcn: receptive field {self.receptive_field} < task dependency {spec.dependency}; "
                f"the task is unsolvable as configured; raise model.n_levels or model.kernel_size",
                ReceptiveFieldWarning, stacklevel=2)

    @property
    def receptive_field(self) -> int:
        return self.cfg.receptive_field()

    def forward(self, x, lengths=None, state=None):
        # Causal convs: right padding never reaches valid steps, so lengths need no mask.
        h = self.blocks(x.transpose(1, 2))  # (B, d_model, T)
        return h.transpose(1, 2), state  # (B, T, d_model)
