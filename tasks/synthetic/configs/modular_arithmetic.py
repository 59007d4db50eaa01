"""Modular arithmetic: the running sum mod ``modulus`` (after Delétang et al. 2023, "modular
arithmetic (simple)", regular; the word problem of the cyclic group Z_m).

Worked example (modulus=5, scored=every)::

    input : 3 4 0 2 1 4
    target: 3 2 2 4 0 4          the sum so far mod 5

With ``scored=last`` only the final position is scored (one label per sequence, as in Delétang).
A recurrence with ``modulus`` states solves it at every length; ``modulus=2`` is ``parity``.

Training batches each draw a length from ``[length_min, length]`` (``LengthRangeConfig``):
train on 1-40, test on longer lengths with ``eval.lengths`` (Delétang et al.'s protocol).

Memoryless baseline (sees the current number and its position, nothing earlier): the sum of a
prefix of ``k >= 2`` numbers is the current number plus the sum of the ``k - 1`` before it, and
that earlier sum is uniform over Z_m (the first number is) and independent of the current one, so
the best guess is uniform: accuracy ``1/m``, cross-entropy ``ln m``; the first position's sum is
its number (accuracy 1, loss 0). ``scored=last``: accuracy and loss averaged over the drawn
lengths (a length-1 sequence is free); ``scored=every``: accuracy over all scored positions
(``sum_n (1 + (n-1)/m) / sum_n n``), loss the mean of each length's per-position loss
(``mean_n (n-1) ln m / n``). At the defaults (m=5, lengths 1-40, last): accuracy
``(1 + 39/5) / 40 = 0.22``, loss ``39 ln 5 / 40 = 1.5692``. Solved: ``val/acc >= 0.95``.

Differs from Delétang et al.: their input is an expression over Z_5 of numbers joined by ``+``,
``-`` and ``*`` without brackets (``*`` binds tighter, odd lengths only), evaluated once at an
extra query position after the input; its automaton keeps two registers (the sum so far and the
pending product), and a factor 0 resets the product, so it is no group. Here every token is a
number, the only operation is ``+``, and the answer is read off the last input position: the
pure counting-mod-m core of the task.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import LengthRangeConfig


@TASKS.config("modular_arithmetic")
class ModularArithmeticConfig(LengthRangeConfig):
    """Running sum mod m (Z_m state tracking; after Delétang's modular arithmetic); train short, test long."""

    name: Literal["modular_arithmetic"] = "modular_arithmetic"

    modulus: int = Field(5, ge=2, description="m: numbers 0..m-1 and m states (Delétang: 5); 2 is parity")
    scored: Literal["last", "every"] = Field(
        "last", description="last: one label per sequence (Delétang); every: the running sum at each step"
    )
