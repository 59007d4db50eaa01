"""``stack``: the residual stack around a sequence mixer (config and rationale:
``models/configs/stack.py``). The mixer is built as ``Cls(d_model, **mixer_args)``, with
``causal=`` when its constructor takes it and ``positions=`` for rope or alibi (the config allows
them only for a mixer that lists them in ``inner_positions``: attention); a mixer whose ``forward``
takes ``valid`` gets the (B, T) padding mask, the others see padded positions (after the valid
ones: harmless for causal mixers, and pooled heads read valid positions only)."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS, MODELS
from seqbench.models.base import Backbone
from seqbench.models.blocks import FeedForward, PositionalEncoding, Residual, make_norm, split_positions, valid_mask
from seqbench.models.configs.stack import StackConfig  # the config, beside its module


def takes(fn: Any, name: str) -> bool:
    """Whether ``fn`` accepts the keyword ``name``."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def build_mixer(mixer: str, d_model: int, args: dict[str, Any], causal: bool, positions: str = "none") -> nn.Module:
    """The mixer ``mixer`` of width ``d_model``: ``Cls(d_model, **args)`` (+ ``causal=`` if it takes it,
    + ``positions=`` unless none: rope or alibi, which ``StackConfig`` allows only where the mixer has them).
    A plug-in is probed once (``probe_mixer``) and refused with one line before any training."""
    entry = MIXERS.get(mixer)
    cls = entry.cls
    extra: dict[str, Any] = {"causal": causal} if takes(cls.__init__, "causal") else {}
    if positions != "none":
        extra["positions"] = positions
    try:
        module = cls(d_model, **args, **extra)
    except Exception as e:
        if entry.origin == "seqbench":
            raise
        raise UserError(
            f"model.mixer: {mixer} could not be built as {cls.__qualname__}(d_model={d_model}, "
            f"**{args}): {type(e).__name__}: {e}"
        ) from None
    if entry.origin != "seqbench":
        problem = _probe_plugin(module, d_model, causal)
        if problem:
            raise UserError(f"model.mixer: {mixer} {problem}")
    return module


def _probe_plugin(module: nn.Module, d_model: int, causal: bool) -> str | None:
    try:
        return probe_mixer(module, d_model, causal)
    except Exception as e:  # noqa: BLE001  (the plug-in's forward failed: say how, in one line)
        return f"failed on a (2, 8, {d_model}) input: {type(e).__name__}: {' '.join(str(e).split())}"


class MixerBlock(nn.Module):
    """``Residual(mixer)``, then ``Residual(MLP)`` when the config has one."""

    def __init__(self, cfg: StackConfig, causal: bool):
        super().__init__()
        d = cfg.d_model

        def res(f: nn.Module) -> Residual:
            return Residual(f, d, cfg.norm_position, cfg.norm, cfg.dropout)

        mixer = build_mixer(cfg.mixer, d, cfg.mixer_args, causal, split_positions(cfg.positions())[1])
        self.takes_valid = takes(mixer.forward, "valid")
        self.mixer = res(mixer)
        self.mlp = res(FeedForward(d, cfg.ff_width(), cfg.dropout)) if cfg.mlp else None

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        x = self.mixer(x, valid=valid) if self.takes_valid and valid is not None else self.mixer(x)
        return x if self.mlp is None else self.mlp(x)


@MODELS.module("stack")
class Stack(Backbone):
    def __init__(self, cfg: StackConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        d = cfg.d_model
        self.proj = nn.Identity() if d_in == d else nn.Linear(d_in, d)
        self.pos = PositionalEncoding(split_positions(cfg.positions())[0], d, cfg.max_len)  # rope, alibi: in the mixer
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(MixerBlock(cfg, spec.causal) for _ in range(cfg.n_layers))
        self.final_norm = make_norm(cfg.norm, d) if cfg.norm_position == "pre" else None
        self.d_out = d

    def forward(self, x, lengths=None, state=None):
        h = self.drop(self.pos(self.proj(x)))  # (B, T, d_model)
        valid = valid_mask(lengths, x.shape[1], x.device)
        for block in self.blocks:
            h = block(h, valid)
        return (h if self.final_norm is None else self.final_norm(h)), state


def probe_mixer(mixer: nn.Module, d_model: int, causal: bool, T: int = 8, cut: int = 3) -> str | None:
    """One forward pass on probe inputs: what is wrong with ``mixer``'s outputs, or None. The output
    must be (B, T, d_model) and finite, and on a causal task outputs up to ``cut`` must not move when
    the inputs after ``cut`` change."""
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, T, d_model, generator=g)
    y = x.clone()
    y[:, cut + 1 :] = torch.randn(2, T - cut - 1, d_model, generator=g)
    was = mixer.training
    mixer.eval()
    try:
        with torch.no_grad():
            a, b = mixer(x), mixer(y)
    finally:
        mixer.train(was)
    if not isinstance(a, torch.Tensor) or a.shape != x.shape:
        shape = tuple(a.shape) if isinstance(a, torch.Tensor) else type(a).__name__
        return f"forward maps (2, {T}, {d_model}) to {shape}; a mixer returns (B, T, d_model)"
    if not torch.isfinite(a).all():
        return "forward returns NaN or inf on random inputs"
    if causal and not torch.allclose(a[:, : cut + 1], b[:, : cut + 1], atol=1e-5, rtol=1e-4):
        return (
            f"reads the future: its output at position {cut} changes when only later inputs change, but the "
            "task is causal (make it causal, or take a `causal` argument and honour it)"
        )
    return None
