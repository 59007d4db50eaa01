"""The contract leaf: what models, tasks and the core share, and nothing else.

Models and tasks import this module (and ``bench.core.schema``/``bench.core.registry``/``bench.core.errors``, which
are leaves too) and never each other. It imports only the standard library (torch for type annotations only).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the ground imports no torch: Batch's fields are annotations only
    import torch

from seqbench.bench.core.errors import UserError  # noqa: F401  (re-exported: part of the contract)
from seqbench.bench.core.registry import Registry  # noqa: F401
from seqbench.bench.core.schema import Section  # noqa: F401

IGNORE = -100  # target value for positions that carry no answer (F.cross_entropy's default)


class Goal(str, enum.Enum):
    """Whether a metric improves downwards (loss, mse, bpc) or upwards (acc, bleu)."""

    MIN = "min"
    MAX = "max"

    @property
    def optuna(self) -> str:
        """The direction in Optuna's (and sweep specs') words."""
        return "minimize" if self is Goal.MIN else "maximize"

    def better(self, a: float, b: float) -> float:
        """The better of two values."""
        return min(a, b) if self is Goal.MIN else max(a, b)


@dataclass(frozen=True)
class MetricDef:
    """One metric a task reports as ``<split>/<name>`` (``val/acc``, ``test@200/acc``)."""

    name: str
    goal: Goal


LOSS = MetricDef("loss", Goal.MIN)  # every task reports its training objective
TRAIN_TIME = MetricDef("time/train_s", Goal.MIN)  # results.json `final` key of every run (seconds in fit)


class OutputKind(str, enum.Enum):
    TOKENS = "tokens"  # a class per time step: logits (B, T, C)
    CLASS = "class"  # one class per sequence, pooled: logits (B, C)
    REGRESSION = "regression"  # one real number per sequence, pooled: (B,)
    SEQ2SEQ = "seq2seq"  # a target sequence of its own length: logits (B, T_out, V)


@dataclass(frozen=True)
class TaskFacts:
    """What a task declares once, on its config class (``TaskConfig.facts``).

    ``metrics`` are the task's own (``loss`` is implied and comes first in ``names``);
    ``primary`` is the metric sweeps optimise by default and ``solved`` looks at.
    """

    output_kind: OutputKind
    causal: bool  # output at t may depend only on inputs <= t
    metrics: tuple[MetricDef, ...] = ()
    primary: str = "loss"

    def __post_init__(self) -> None:
        names = [m.name for m in self.all_metrics]
        if len(set(names)) != len(names):
            raise ValueError(f"TaskFacts: metric names repeat: {names}")
        if self.primary not in names:
            raise ValueError(f"TaskFacts: primary metric {self.primary!r} is not one of {names}")

    @property
    def all_metrics(self) -> tuple[MetricDef, ...]:
        return (LOSS, *self.metrics)

    @property
    def names(self) -> tuple[str, ...]:
        """Metric names without the split prefix, ``loss`` first."""
        return tuple(m.name for m in self.all_metrics)

    def keys(self, *splits: str) -> list[str]:
        """``<split>/<name>`` for every metric and split, e.g. ``keys("val")`` -> ``[val/loss, val/acc]``."""
        return [f"{s}/{n}" for s in splits for n in self.names]

    def goal(self, key: str) -> Goal:
        """Direction of a metric key: ``val/acc``, ``test@200/loss``, a bare ``acc``, or ``time/train_s``.

        A key the task does not declare raises KeyError (callers validate keys first)."""
        if key == TRAIN_TIME.name:
            return TRAIN_TIME.goal
        name = key.rsplit("/", 1)[-1]
        for m in self.all_metrics:
            if m.name == name:
                return m.goal
        raise KeyError(f"metric {key!r} is not one of {', '.join(self.names)}")

    @property
    def primary_goal(self) -> Goal:
        return self.goal(self.primary)


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
