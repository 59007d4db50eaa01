"""The contract leaf: what models, tasks and the core share, and nothing else.

Models and tasks import this module (and ``bench.schema``/``bench.registry``/``bench.errors``, which
are leaves too) and never each other. It imports only the standard library and torch.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

import torch

from seqbench.bench.errors import UserError  # noqa: F401  (re-exported: part of the contract)
from seqbench.bench.registry import Registry  # noqa: F401
from seqbench.bench.schema import Section  # noqa: F401

IGNORE = -100  # target value for positions that carry no answer (F.cross_entropy's default)


class OutputKind(str, enum.Enum):
    TOKENS = "tokens"  # a class per time step: logits (B, T, C)
    CLASS = "class"  # one class per sequence, pooled: logits (B, C)
    REGRESSION = "regression"  # one real number per sequence, pooled: (B,)
    SEQ2SEQ = "seq2seq"  # a target sequence of its own length: logits (B, T_out, V)


@dataclass(frozen=True)
class TaskSpec:
    """What a model needs to know to be built for a task."""

    output_kind: OutputKind
    n_classes: int  # per-step or pooled classes; 1 for regression; target vocab for seq2seq
    causal: bool
    vocab_size: int | None = None  # token inputs (None for real-valued inputs)
    input_dim: int | None = None  # channels of real-valued inputs
    pad_id: int | None = None  # padding token of variable-length inputs
    pooling: str = "last"  # how CLASS/REGRESSION heads pool features over time
    dependency: int = 0  # longest input->answer distance (TCN receptive-field check)
    stateful: bool = False  # carry recurrent state across consecutive batches (TBPTT)
    sos_id: int | None = None  # seq2seq decoding start token
    eos_id: int | None = None  # seq2seq end token


@dataclass
class Batch:
    """One batch on the training device.

    x: (B, T) long tokens or (B, T, C) float. y: targets, shape by output kind
    ((B, T) long with IGNORE where unscored, (B,) long, (B,) float, (B, T_out) long).
    score_mask: (B, T) bool, positions that count for per-step metrics (None: every
    position whose target is not IGNORE). lengths: (B,) valid input lengths, None when
    every sequence is full length. aux: task-specific extras (seq2seq decoder inputs...).
    """

    x: torch.Tensor
    y: torch.Tensor
    score_mask: torch.Tensor | None = None
    lengths: torch.Tensor | None = None
    aux: dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return self.x.shape[0]
