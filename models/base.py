"""The Model interface's modules: ``Backbone``, the shared ``InputEncoder``, pooling and ``SequenceModel``.

The config (no torch) is in ``models/configs/base.py``, where the family is documented."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.contract import Batch, OutputKind, TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.models.configs.base import PER_STEP_AND_POOLED, Dropout, Layers, ModelConfig, head_macs, input_width  # noqa: F401  (the configs, re-exported beside their modules)


class Backbone(nn.Module):
    """``forward(x (B, T, d_in), lengths (B,) | None, state) -> (features (B, T, d_out), state)``."""

    d_out: int

    def __init__(self, cfg: ModelConfig, spec: TaskSpec, d_in: int):
        super().__init__()
        self.cfg, self.spec, self.d_in = cfg, spec, d_in

    def forward(
        self, x: torch.Tensor, lengths: torch.Tensor | None = None, state: Any = None
    ) -> tuple[torch.Tensor, Any]:
        raise NotImplementedError

    def pool_last(self, h: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """Features of the last valid step, (B, d_out)."""
        if lengths is None:
            return h[:, -1]
        idx = (lengths - 1).clamp_min(0).to(h.device)
        return h[torch.arange(h.shape[0], device=h.device), idx]


class InputEncoder(nn.Module):
    """Tokens -> learned embedding or one-hot vectors; real-valued inputs pass through."""

    def __init__(self, cfg: ModelConfig, spec: TaskSpec):
        super().__init__()
        vocab = spec.vocab_size
        self.onehot = vocab is not None and cfg.embedding == "onehot"
        self.vocab = vocab or 0  # the one-hot width (0: real-valued inputs)
        self.d_out = input_width(cfg, vocab, spec.input_dim)
        self.embed = None if vocab is None or self.onehot else nn.Embedding(vocab, cfg.d_model, padding_idx=spec.pad_id)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.embed is not None:
            return self.embed(x)  # (B, T, d_model)
        if self.onehot:
            return F.one_hot(x, self.vocab).float()  # (B, T, V)
        return x if x.dim() == 3 else x.unsqueeze(-1)  # (B, T, C)


class Pool(nn.Module):
    """Sequence -> vector for pooled heads: last | mean | max | attention (learned query)."""

    def __init__(self, mode: str, d: int):
        super().__init__()
        if mode not in ("last", "mean", "max", "attention"):
            raise ValueError(f"pooling must be last|mean|max|attention, got {mode!r}")
        self.mode = mode
        self.query = nn.Parameter(torch.randn(d) / d**0.5) if mode == "attention" else None

    def forward(self, h: torch.Tensor, lengths: torch.Tensor | None, backbone: Backbone) -> torch.Tensor:
        if self.mode == "last":
            return backbone.pool_last(h, lengths)
        B, T, _ = h.shape
        valid = (
            torch.ones(B, T, dtype=torch.bool, device=h.device)
            if lengths is None
            else (torch.arange(T, device=h.device)[None, :] < lengths.to(h.device)[:, None])
        )  # (B, T)
        if self.mode == "mean":
            return (h * valid[..., None]).sum(1) / valid.sum(1, keepdim=True).clamp_min(1)
        if self.mode == "max":
            return h.masked_fill(~valid[..., None], float("-inf")).max(1).values
        assert self.query is not None  # the attention mode's learned query
        scores = (h @ self.query).masked_fill(~valid, float("-inf"))  # (B, T)
        return (scores.softmax(-1)[..., None] * h).sum(1)


class SequenceModel(nn.Module):
    """Input encoder -> backbone -> head chosen by the task's output kind."""

    def __init__(self, cfg: ModelConfig, spec: TaskSpec, backbone_cls: type[Backbone]):
        super().__init__()
        self.kind = spec.output_kind
        self.encoder = InputEncoder(cfg, spec)
        self.backbone = backbone_cls(cfg, spec, self.encoder.d_out)
        d = self.backbone.d_out
        self.pool = None if self.kind is OutputKind.TOKENS else Pool(spec.pooling, d)
        self.head = nn.Linear(d, spec.n_classes)

    def forward(self, batch: Batch, state: Any = None) -> tuple[torch.Tensor, Any]:
        h, state = self.backbone(self.encoder(batch.x), batch.lengths, state)  # (B, T, d)
        if self.kind is OutputKind.TOKENS:
            return self.head(h), state  # (B, T, C)
        assert self.pool is not None  # every kind but per-step tokens pools
        out = self.head(self.pool(h, batch.lengths, self.backbone))  # (B, C)
        return (out.squeeze(-1) if self.kind is OutputKind.REGRESSION else out), state


def build_model(cfg: ModelConfig, spec: TaskSpec) -> nn.Module:
    """The registered model for ``cfg.name``, built for ``spec``."""
    cls = MODELS.get(cfg.name).cls
    if isinstance(cls, type) and issubclass(cls, Backbone):
        return SequenceModel(cfg, spec, cls)
    return cls(cfg, spec)


def detach_state(state: Any) -> Any:
    """A recurrent state (a tensor, a tuple such as an LSTM's (h, c), nested, or None) cut from the graph:
    the same values, no gradient back through it (truncated BPTT, within a sequence or across batches)."""
    if state is None:
        return None
    if isinstance(state, torch.Tensor):
        return state.detach()
    return type(state)(detach_state(s) for s in state)
