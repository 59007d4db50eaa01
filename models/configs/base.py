"""The Model interface: a backbone maps embedded inputs to features, a head maps
features to the task's output kind. The training loop only sees ``forward(batch, state)``.

Two kinds of registry entries:
- a ``Backbone`` subclass (recurrent, transformer, tcn): wrapped by ``SequenceModel``
  with the shared input encoder and the head the task's output kind asks for;
- a full ``nn.Module`` with ``forward(batch, state) -> (output, state)`` of its own
  (encoder-decoders, which also implement ``generate``).

A shipped model is two files found by name: its config in ``models/configs/NAME.py``, registered
with ``@MODELS.config("name")`` (its docstring is the line ``seqbench list`` shows) and importing
no torch (an import-linter contract), so ``seqbench list`` and ``--print-config`` stay fast; and
its module in ``models/NAME.py``, registered with ``@MODELS.module("name")`` and imported on first
use; plus one line in ``models/configs/__init__.py``. A model from another package needs no edit
of seqbench (``bench/plugins.py``: an entry point or ``model=pkg.module:Class``). The config is a
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
  ``no_flop_count`` (tests/bench/training/test_flops.py holds every registered model to one or the other
  and checks each count against torch's FlopCounterMode);
- ``complexity``: the textbook cost per sequence and its exponent in T, what
  ``seqbench cost`` compares its fitted exponent with (and which models it sweeps by default);
- limits it knows of (a TCN's receptive field) are checked where the module is built and
  warn there.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from seqbench.bench.core.contract import OutputKind, TaskSpec
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
    # A plug-in declared without torch (``seqbench.plugin``): the class this config builds, "pkg.module:Class",
    # imported when a model is built; None for the shipped models and a plug-in registered by its class.
    implementation: ClassVar[str | None] = None

    def label(self) -> str:
        """The model in run ids and progress lines: its name (``stack`` adds its mixer)."""
        return self.name

    d_model: int = Field(128, ge=1, description="hidden/feature width")
    embedding: Literal["learned", "onehot"] = Field(
        "learned", description="token inputs: learned d_model embedding or fixed one-hot vectors"
    )

    def sees_future(self) -> bool:
        """True when outputs at t depend on inputs after t (refused on causal tasks)."""
        return False

    def max_positions(self) -> int | None:
        """The longest input the model takes (a learned position table's size); None: any length.
        A longer training or ``eval.lengths`` sequence is refused before training."""
        return None

    def check_positions(self, n: int, what: str) -> None:
        """Refuse a sequence of ``n`` positions (``what``: which one) longer than ``max_positions``."""
        most = self.max_positions()
        if most is not None and n > most:
            raise ValueError(
                f"model.max_len: {what} has {n} positions, more than the learned encoding's "
                f"model.max_len={most}; raise model.max_len or set model.pos_encoding=sinusoidal"
            )

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
