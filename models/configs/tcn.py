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

from typing import Any, Literal

from pydantic import Field, model_validator

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.bench.core.text import Notice
from seqbench.models.configs.base import Dropout, ModelConfig, head_macs, input_width


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
                raise ValueError(
                    "model.n_layers: a tcn has no n_layers; its depth is model.n_levels (block i has "
                    f"dilation 2^i); allowed: {', '.join(cls.model_fields)}"
                )
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
    return 1 + 2 * (kernel_size - 1) * (2**n_levels - 1)
