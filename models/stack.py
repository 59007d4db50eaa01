"""``stack``: the residual stack around a sequence mixer (config and rationale:
``models/configs/stack.py``). Every mixer is built and called by the ``Mixer`` protocol
(``models/configs/mixer.py``): ``Cls(d_model, causal=..., **mixer_args)``, plus ``positions=`` for rope or
alibi (the config allows them only for a mixer that lists them in ``inner_positions``: attention), then
``mixer(x, valid=valid)`` with the (B, T) padding mask. A plug-in written before the protocol is adapted
once, when it is built (``plugin_mixer``), and probed (``probe_mixer``) before any training."""

from __future__ import annotations

import inspect
from typing import Any

import torch
from torch import nn

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS, MODELS, Entry
from seqbench.models.base import Backbone
from seqbench.models.blocks import FeedForward, PositionalEncoding, Residual, make_norm, split_positions, valid_mask
from seqbench.models.configs.stack import StackConfig  # the config, beside its module


def build_mixer(mixer: str, d_model: int, args: dict[str, Any], causal: bool, positions: str = "none") -> nn.Module:
    """The mixer named ``mixer`` (a registered name or an import path) of width ``d_model``, built from its
    validated ``args`` (``seqbench.testing.check_mixer``; the stack passes the entry its config resolved)."""
    return make_mixer(MIXERS.get(mixer), d_model, args, causal, positions)


def make_mixer(
    entry: Entry[Any], d_model: int, args: dict[str, Any], causal: bool, positions: str = "none"
) -> nn.Module:
    """``entry``'s mixer by the ``Mixer`` protocol: ``Cls(d_model, causal=causal, **args)``, with ``positions=``
    unless none (rope or alibi, which ``StackConfig`` allows only where the mixer has them). A shipped mixer
    that fails to build is seqbench's bug and keeps its traceback; a plug-in goes through ``plugin_mixer``."""
    extra: dict[str, Any] = {"positions": positions} if positions != "none" else {}
    if entry.origin == "seqbench":
        return entry.cls(d_model, causal=causal, **args, **extra)
    return plugin_mixer(entry, d_model, {**args, **extra}, causal)


def plugin_mixer(entry: Entry[Any], d_model: int, args: dict[str, Any], causal: bool) -> nn.Module:
    """A plug-in's mixer, built, adapted to the ``Mixer`` protocol and probed, or a one-line UserError.

    Plug-ins predate the protocol (issue 40): the contract used to be ``Cls(d_model, **mixer_args)``, with
    ``causal=`` passed only to a constructor that names it, and ``forward(x)``, with the padding mask passed
    only to a ``forward`` that names ``valid``. Such a plug-in keeps working, adapted here, once, at build
    time, and nowhere else: ``causal`` goes to its constructor only if it takes it (it is then causal by
    construction, which the probe checks on a causal task), and a ``forward`` without ``valid`` gets a
    forward pre-hook that drops the mask, so the stack calls every mixer the same way and the plug-in sees
    its padded positions as before. A hook rather than a wrapper module keeps the plug-in's parameter names
    (and so the checkpoints of its runs) as they were."""
    cls = entry.cls
    extra: dict[str, Any] = {"causal": causal} if _takes(cls.__init__, "causal") else {}
    try:
        module = cls(d_model, **args, **extra)
    except Exception as e:  # noqa: BLE001  (the plug-in's constructor: any error is its, named in one line)
        raise UserError(
            f"model.mixer: {entry.name} could not be built as {cls.__qualname__}(d_model={d_model}, "
            f"**{args}): {type(e).__name__}: {e}"
        ) from None
    if not _takes(module.forward, "valid"):
        module.register_forward_pre_hook(_without_valid, with_kwargs=True)
    problem = _probe_plugin(module, d_model, causal)
    if problem:
        raise UserError(f"model.mixer: {entry.name} {problem}")
    return module


def _takes(fn: Any, name: str) -> bool:
    """Whether ``fn`` accepts the keyword ``name`` (a plug-in's signature, read once by ``plugin_mixer``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return name in params or any(p.kind is p.VAR_KEYWORD for p in params.values())


def _without_valid(module: nn.Module, args: tuple, kwargs: dict[str, Any]) -> tuple[tuple, dict[str, Any]]:
    """A forward pre-hook: the call without ``valid``, for a plug-in whose ``forward`` does not take it
    (``plugin_mixer``). At module level, so a model holding it pickles (``ddp_spawn``)."""
    return args, {k: v for k, v in kwargs.items() if k != "valid"}


def _probe_plugin(module: nn.Module, d_model: int, causal: bool) -> str | None:
    try:
        return probe_mixer(module, d_model, causal)
    except Exception as e:  # noqa: BLE001  (the plug-in's forward failed: say how, in one line)
        return f"failed on a (2, 8, {d_model}) input: {type(e).__name__}: {' '.join(str(e).split())}"


class MixerBlock(nn.Module):
    """``Residual(mixer)``, then ``Residual(MLP)`` when the config has one; ``inner``: the position encoding
    the mixer applies itself (rope, alibi) or none."""

    def __init__(self, cfg: StackConfig, causal: bool, inner: str):
        super().__init__()
        d = cfg.d_model

        def res(f: nn.Module) -> Residual:
            return Residual(f, d, cfg.norm_position, cfg.norm, cfg.dropout)

        self.mixer = res(make_mixer(cfg.mixer_entry(), d, cfg.mixer_args, causal, inner))
        self.mlp = res(FeedForward(d, cfg.ff_width(), cfg.dropout)) if cfg.mlp else None

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None) -> torch.Tensor:
        x = self.mixer(x, valid=valid)  # (B, T, d_model): every mixer called alike (the Mixer protocol)
        return x if self.mlp is None else self.mlp(x)


@MODELS.module("stack")
class Stack(Backbone):
    def __init__(self, cfg: StackConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        d = cfg.d_model
        outer, inner = split_positions(cfg.positions())  # rope, alibi: inside the mixer
        self.proj = nn.Identity() if d_in == d else nn.Linear(d_in, d)
        self.pos = PositionalEncoding(outer, d, cfg.max_len)
        self.drop = nn.Dropout(cfg.dropout)
        self.blocks = nn.ModuleList(MixerBlock(cfg, spec.causal, inner) for _ in range(cfg.n_layers))
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
