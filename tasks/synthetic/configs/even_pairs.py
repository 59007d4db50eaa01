"""Even pairs: is the number of ``ab`` plus ``ba`` substrings even? (Delétang et al. 2023, "even
pairs", regular.)

Worked example (scored=every; tokens a = 0, b = 1; classes 0 = even, 1 = odd, as in Delétang)::

    input : a b b a a b
    target: 0 1 1 0 0 1          0, 1, 1, 2, 2, 3 pairs so far

Each ``ab`` or ``ba`` is a change of symbol, and a two-letter string changes symbol an even number of
times exactly when it ends with the letter it started with: the answer is ``first symbol != last
symbol``. So the automaton needs one bit, written at the first step and compared ever after; no
counting. With ``scored=last`` (the default, as in Delétang) only the final position is scored;
``scored=every`` labels every prefix.

Training batches each draw a length from ``[length_min, length]`` (``LengthRangeConfig``):
train on 1-40, test on longer lengths with ``eval.lengths`` (Delétang et al.'s protocol).

Memoryless baseline (sees the current symbol and its position, nothing earlier): a prefix of one
symbol has no pairs (even: accuracy 1, loss 0); a longer prefix's answer compares the current symbol
with the first, an independent fair coin: accuracy 1/2, cross-entropy ln 2 (the numbers of
``parity``). ``scored=last``: averaged over the drawn lengths; ``scored=every``: accuracy over all
scored positions (``sum_n (1 + (n-1)/2) / sum_n n``), loss the mean of each length's per-position
loss (``mean_n (n-1) ln 2 / n``). At the defaults (lengths 1-40, last): accuracy
``(1 + 39/2) / 40 = 0.5125``, loss ``39 ln 2 / 40 = 0.67582``. Solved: ``val/acc >= 0.95``.

Differs from Delétang et al.: their strings are over {0, 1} with the same labels; the model reads
the string and then answers at an extra query position, where here the answer is read off the last
input position. Their training lengths are 1-40 as here; they test at 41-500.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import LengthRangeConfig


@TASKS.config("even_pairs")
class EvenPairsConfig(LengthRangeConfig):
    """Even pairs: an even number of ab/ba? (first symbol == last; Delétang et al. 2023); train short, test long."""

    name: Literal["even_pairs"] = "even_pairs"

    scored: Literal["last", "every"] = Field(
        "last", description="last: one label per sequence (Delétang); every: the answer for each prefix"
    )
