"""The Model interface: a backbone maps embedded inputs to features, a head maps
features to the task's output kind. The training loop only sees ``forward(batch, state)``.

Two kinds of registry entries:
- a ``Backbone`` subclass (recurrent, transformer, tcn): wrapped by ``SequenceModel``
  with the shared input encoder and the head the task's output kind asks for;
- a full ``nn.Module`` with ``forward(batch, state) -> (output, state)`` of its own
  (encoder-decoders, which also implement ``generate``).

Adding a model is one file plus one import line in ``models/__init__.py``. The file has two
parts (bench/core/configs_only.py): above the ``# -- torch below`` line, its config registered
with ``@MODELS.config("name")`` (its docstring is the line ``seqbench list`` shows), importing
no torch, so ``seqbench list`` and ``--print-config`` stay fast; below it, the module class
registered with ``@MODELS.module("name")``. (``@MODELS.register("name", config=NameConfig)``
on the class does both, for a file that keeps no torch-free part.) The config is a
``ModelConfig`` subclass that tells the harness everything else it knows about the
architecture, so no harness module keeps a table keyed by model name:

- its fields (typed, defaulted, described; only the knobs it has: depth is ``n_layers``
  where layers stack, ``n_levels`` for a TCN; ``Layers`` and ``Dropout`` below are the
  shared spellings);
- ``supported_kinds``: the output kinds it can produce (``RunConfig`` refuses the others);
- ``sees_future()``: whether outputs at t read inputs after t (refused on causal tasks);
- ``forward_macs(spec, T, target_len)``: multiply-accumulates of one forward pass over one
  training sequence, which ``bench/training/flops.py`` turns into FLOPs per token and MFU.
  Counted as there: matrix products and convolutions only, every (query, key) pair of
  attention, embedding lookups free. ``input_width`` and ``head_macs`` count
  the shared encoder and head. A model that cannot count returns None and says why in
  ``no_flop_count`` (tests/test_flops.py holds every registered model to one or the other
  and checks each count against torch's FlopCounterMode);
- ``complexity``: the textbook cost per sequence and its exponent in T, what
  ``seqbench cost`` compares its fitted exponent with (and which models it sweeps by default);
- limits it knows of (a TCN's receptive field) are checked where the module is built and
  warn there.
"""
from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from seqbench.bench.core.contract import OutputKind, TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.bench.core.schema import Section

PER_STEP_AND_POOLED = frozenset({OutputKind.TOKENS, OutputKind.CLASS, OutputKind.REGRESSION})


# Shared spellings of knobs several families have (a family declares the ones it has).
Layers = Annotated[int, Field(ge=1, description="stacked layers")]
Dropout = Annotated[float, Field(ge=0.0, lt=1.0, description="dropout between layers and on the output features")]


class ModelConfig(Section):
    """Fields every model has (the shared input encoder reads them; ``seqbench cost`` sets
    ``d_model``) and the interface the harness calls (module docstring). Subclasses add
    ``name: Literal[...]`` and their knobs."""

    name: str
    supported_kinds: ClassVar[frozenset[OutputKind]] = PER_STEP_AND_POOLED
    # ("O(T·d²)", 1): the cost per sequence in words and its exponent in T; None = not in
    # `seqbench cost`'s complexity table (nor its default models).
    complexity: ClassVar[tuple[str, int] | None] = None
    # Why forward_macs gives no count (required when it is not overridden); None = it counts.
    no_flop_count: ClassVar[str | None] = None

    d_model: int = Field(128, ge=1, description="hidden/feature width")
    embedding: Literal["learned", "onehot"] = Field(
        "learned", description="token inputs: learned d_model embedding or fixed one-hot vectors")

    def sees_future(self) -> bool:
        """True when outputs at t depend on inputs after t (refused on causal tasks)."""
        return False

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int | None:
        """Multiply-accumulates of one forward pass over one training sequence of ``T`` input
        positions; ``target_len`` is the decoder's positions on a seq2seq task (None otherwise).
        None where no honest count exists (set ``no_flop_count`` to say why)."""
        return None


def input_width(cfg: ModelConfig, vocab: int | None, input_dim: int | None) -> int:
    """Width of what ``InputEncoder`` hands the first layer: real channels, one-hot vectors
    of the vocabulary, or a learned ``d_model`` embedding (a lookup: no MACs of its own)."""
    if vocab is None:
        return input_dim or 1
    return vocab if cfg.embedding == "onehot" else cfg.d_model


def head_macs(spec: TaskSpec, d: int, T: int) -> int:
    """MACs per sequence of ``SequenceModel``'s head on ``d`` features: per position for TOKENS,
    once for pooled heads (plus attention pooling's scores h @ q and weighted sum)."""
    if spec.output_kind is OutputKind.TOKENS:
        return T * d * spec.n_classes
    return d * spec.n_classes + (2 * T * d if spec.pooling == "attention" else 0)


# -- torch below: the modules. Everything above imports without torch (bench/core/configs_only.py).
import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.contract import Batch


class Backbone(nn.Module):
    """``forward(x (B, T, d_in), lengths (B,) | None, state) -> (features (B, T, d_out), state)``."""

    d_out: int

    def __init__(self, cfg: ModelConfig, spec: TaskSpec, d_in: int):
        super().__init__()
        self.cfg, self.spec, self.d_in = cfg, spec, d_in

    def forward(self, x: torch.Tensor, lengths: torch.Tensor | None = None,
                state: Any = None) -> tuple[torch.Tensor, Any]:
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
        self.onehot = spec.vocab_size is not None and cfg.embedding == "onehot"
        self.vocab = spec.vocab_size
        self.d_out = input_width(cfg, spec.vocab_size, spec.input_dim)
        learned = spec.vocab_size is not None and not self.onehot
        self.embed = nn.Embedding(spec.vocab_size, cfg.d_model, padding_idx=spec.pad_id) if learned else None

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
        self.query = nn.Parameter(torch.randn(d) / d ** 0.5) if mode == "attention" else None

    def forward(self, h: torch.Tensor, lengths: torch.Tensor | None, backbone: Backbone) -> torch.Tensor:
        if self.mode == "last":
            return backbone.pool_last(h, lengths)
        B, T, _ = h.shape
        valid = torch.ones(B, T, dtype=torch.bool, device=h.device) if lengths is None else (
            torch.arange(T, device=h.device)[None, :] < lengths.to(h.device)[:, None])  # (B, T)
        if self.mode == "mean":
            return (h * valid[..., None]).sum(1) / valid.sum(1, keepdim=True).clamp_min(1)
        if self.mode == "max":
            return h.masked_fill(~valid[..., None], float("-inf")).max(1).values
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
        out = self.head(self.pool(h, batch.lengths, self.backbone))  # (B, C)
        return (out.squeeze(-1) if self.kind is OutputKind.REGRESSION else out), state


def build_model(cfg: ModelConfig, spec: TaskSpec) -> nn.Module:
    """The registered model for ``cfg.name``, built for ``spec``."""
    cls = MODELS.get(cfg.name).cls
    if isinstance(cls, type) and issubclass(cls, Backbone):
        return SequenceModel(cfg, spec, cls)
    return cls(cfg, spec)
