"""Parity: is the number of ones so far odd? (Delétang et al. 2023, "parity check", regular;
Merrill, Petty & Sabharwal 2024; Grazzi et al. 2025.)

Worked example (length=6, scored=every)::

    input : 1 0 1 1 0 1
    target: 1 1 0 1 1 0          running parity (xor of the prefix)

With ``scored=last`` only the final position is scored (Delétang's "parity check": one label
per sequence). Parity is the simplest state-tracking problem: a two-state automaton (the group
Z2), solved exactly by a recurrence of any width, out of reach of a fixed-depth Transformer
or of a linear RNN whose state-transition eigenvalues are all in [0, 1] (Grazzi et al. 2025,
Theorem 1) at lengths beyond training.

Training batches each draw a length from ``[length_min, length]`` (``LengthRangeConfig``):
train on 1-40, test on longer lengths with ``eval.lengths`` (Delétang et al.'s protocol).

Memoryless baseline (sees only the current bit): the parity of a prefix of ``k >= 2`` bits is
independent of its last bit, so a fair guess (accuracy 1/2, cross-entropy ln 2); the first
position's parity is its bit. ``scored=last``: accuracy and loss averaged over the drawn
lengths (a length-1 sequence is free); ``scored=every``: accuracy over all scored positions
(``sum_n (1 + (n-1)/2) / sum_n n``), loss the mean of each length's per-position loss.
Solved: ``val/acc >= 0.95``.

Differs from Delétang et al. (their code's parity check task): their model reads the bits
(one-hot 0/1, as ours are tokens 0/1) and answers at an extra query position after the string; here the
answer is read off the last input position (causal models). Their training lengths are 1-40 as here;
they test every length 41-500 and score the mean accuracy there.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import LengthRangeConfig


@TASKS.config("parity")
class ParityConfig(LengthRangeConfig):
    """Parity of a bit string: the simplest state tracking (Z2); train short, test long."""

    name: Literal["parity"] = "parity"

    scored: Literal["last", "every"] = Field(
        "last", description="last: one label per sequence (Delétang); every: the running parity at each step"
    )
