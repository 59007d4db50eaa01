"""The sequence-mixer interface (no torch): the ``Mixer`` protocol the residual ``stack`` model
(``models/stack.py``, config ``models/configs/stack.py``) builds and calls every mixer by, and what a
mixer's config declares.

A mixer maps (B, T, d_model) to (B, T, d_model); the stack puts the same embedding, norm placement,
MLP and head around every mixer, so only the mixer differs between two models (the Zoology and MAD
practice). A shipped mixer is a config here, ``@MIXERS.config("name")`` on a ``MixerConfig``
subclass in ``models/configs/NAME.py`` whose fields are the mixer's own knobs (``model.mixer_args``),
and its module, ``@MIXERS.module("name")`` in ``models/NAME.py``, a class that implements ``Mixer``. A
plug-in mixer is any class with that constructor (``bench/plugins.py``; ``seqbench.testing.check_mixer``),
or, declared without torch, a ``MixerConfig`` subclass whose ``implementation`` names that class by import
path (``seqbench.plugin``), imported when a model is built. Plug-ins written before the protocol was stated
(a constructor without ``causal``, a ``forward(x)`` without ``valid``) still work: the stack adapts them
once, when it builds them (``models.stack.plugin_mixer``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Protocol

from pydantic import ValidationInfo

from seqbench.bench.core.schema import Section

if TYPE_CHECKING:  # the annotations only: this module is what `seqbench list` reads, without torch
    import torch


class Mixer(Protocol):
    """What the stack builds and calls: every shipped mixer implements it, a plug-in should.

    Built once per block as ``Cls(d_model, causal=causal, **settings)``: ``settings`` are
    ``model.mixer_args`` as the mixer's config validated them (every default filled in), plus
    ``positions="rope"`` or ``"alibi"`` for a mixer whose config lists that encoding in ``inner_positions``
    (only then, and only when ``model.pos_encoding`` chooses it). Called as ``mixer(x, valid=valid)``.

    ``causal`` is the task's: True when a prediction at position t is scored from the inputs up to t (a
    language model, copy). Then the output at t may depend only on inputs at positions <= t; the stack
    probes a plug-in for it before training, and ``seqbench.testing.check_mixer`` at every t. False
    permits reading later positions, it does not require it: a mixer that is causal by construction (a
    recurrence, a causal convolution) takes ``causal=False`` and stays causal, which a bidirectional task
    accepts (it only sees less).

    ``valid`` is (B, T) bool, True at a sequence's real positions and False at its padding, which always
    comes after them (a batch of sequences of several lengths, padded on the right); None when every
    position is real. Outputs at real positions must not depend on padded inputs; outputs at padded
    positions are never read (heads and losses read real positions only), so any finite value will do. A
    causal mixer meets this without reading ``valid`` (padding comes after every real position), which is
    why the causal-only mixers take it and leave it unread.
    """

    def __init__(self, d_model: int, *, causal: bool, **settings: Any) -> None: ...

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x (B, T, d_model) -> (B, T, d_model); ``valid`` (B, T) bool or None, as the class docstring says."""


class MixerConfig(Section):
    """A mixer's own knobs (``model.mixer_args``) and what the harness knows of it."""

    name: str
    # ("O(T·d²)", 1): cost per sequence in words and its exponent in T (``seqbench cost``); None = unknown
    complexity: ClassVar[tuple[str, int] | None] = None
    # Why forward_macs gives no count (required when it is not overridden); None = it counts.
    no_flop_count: ClassVar[str | None] = None
    # Whether the stack adds position signals (``model.pos_encoding=auto``): attention is
    # permutation-equivariant without them; recurrences and convolutions order the sequence themselves.
    needs_positions: ClassVar[bool] = False
    # Position encodings the mixer applies itself (``model.pos_encoding=rope|alibi``), built with
    # ``positions=<kind>``: rope rotates queries and keys, alibi biases scores, so only attention has them.
    inner_positions: ClassVar[frozenset[str]] = frozenset()
    # A plug-in declared without torch (``seqbench.plugin``): its layer class by import path,
    # "mypkg.layers:TokenShift", imported only when a model is built. Shipped mixers leave it None (their
    # module is found by name: ``models/NAME.py``).
    implementation: ClassVar[str | None] = None

    def forward_macs(self, d_model: int, T: int) -> int | None:
        """Multiply-accumulates of one forward pass over one sequence of ``T`` positions, counted as
        ``bench/training/flops.py`` does (matrix products and convolutions; FFT convolutions as the
        products they replace are not counted, say so in ``no_flop_count``). None = no honest count."""
        return None

    def args(self) -> dict:
        """The keyword arguments the module is built with: every field but ``name``."""
        return self.model_dump(exclude={"name"})


def heads_problem(d_model: int, n_heads: int) -> str | None:
    """Why ``n_heads`` cannot split ``d_model`` (naming the knob and its allowed values), or None."""
    if d_model % n_heads == 0:
        return None
    ok = [h for h in range(1, min(d_model, 16) + 1) if d_model % h == 0]
    return f"{n_heads} does not divide model.d_model={d_model}; choose from {ok} or change model.d_model"


def heads_divide_width(n_heads: int, info: ValidationInfo) -> int:
    """A mixer config's ``n_heads`` validator: the stack validates ``mixer_args`` with the width in the
    validation context (``{"d_model": ...}``), so heads that do not divide it are refused by name."""
    d = (info.context or {}).get("d_model")
    problem = heads_problem(d, n_heads) if d else None
    if problem:
        raise ValueError(problem)
    return n_heads
