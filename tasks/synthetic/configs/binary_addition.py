"""Binary addition: read a+b in little-endian binary, write the sum (Delétang et al. 2023, "binary
addition", context-sensitive).

Worked example (problem length n = 9, the whole input a+b; separator ``=``, blank ``_``, end ``$``,
``.`` unscored)::

    input : 0 0 1 + 0 1 1 0 1 = _ _ _ _ _ _ _ _ _        4 + 22, least significant bit first
    target: . . . . . . . . . . 0 1 0 1 1 $ . . .        26, then the end token
                                                          positions(n) = 2n + 1

The problem length n counts the whole input, as Delétang et al. count it: the two numbers and
the ``+``. Each sample splits the n - 1 bits uniformly (a has 1..n-2 bits, b the rest) and draws
each number uniformly among the nonzero values of its width (so a number may carry zeros at its
high end, as theirs do). The answer has a fixed width of n slots, enough for the longest sum
(n - 1 bits) and its end token, so every batch of one length has one layout: the sum's bits
without high zeros, then the end token; the slots after it are neither trained nor scored. The
sum needs carries propagated over unboundedly many positions, and its answer starts with the
lowest bits while the model has already read the whole input.

Training batches each draw a problem length from ``[length_min, length]`` (``LengthRangeConfig``;
the shortest expression is 3 symbols, ``1+1``): train on 3-40, test on longer inputs with
``eval.lengths``.

Memoryless baseline (a model that knows the layout, n and which answer slot it is at, but sees
none of the input: every answer position reads a blank): at slot j the best guess is the most
likely of (bit 0, bit 1, end) among the scored samples of length n, and the best cross-entropy
that distribution's entropy. The distributions are exact: a carry chain over bit positions (a
two-state Markov chain for independent fair bits, forward for the carry, backward for "no
higher bit set"), with the nonzero draws by inclusion-exclusion over a = 0 and b = 0, averaged
over the split of the n - 1 bits. Accuracy micro-averages the scored tokens over the drawn lengths
(``sum_n E[correct_n] / sum_n E[scored_n]``), the loss is the mean over lengths of each length's
mean per scored position: acc 0.5084, loss 0.7585 at the defaults (lengths 3-40). Solved:
``val/acc >= 0.95``.

Differs from Delétang et al.: the vocabulary adds a separator and a blank input token (theirs
appends the answer's blanks straight after the input); their answer has n + 1 slots padded with
zeros after the end token and their loss covers the padding, while here the answer has n slots and
the padding is neither trained nor scored; the accuracy is per-token up to and including the end
token, as theirs. Lengths 1 and 2, where their generator writes a single number without ``+``,
are refused here. Their training lengths are 1-40; they test at 41-500.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import LengthRangeConfig


@TASKS.config("binary_addition")
class BinaryAdditionConfig(LengthRangeConfig):
    """Binary addition, little-endian: write the sum of a+b and an end token (context-sensitive)."""

    name: Literal["binary_addition"] = "binary_addition"

    length: int = Field(40, ge=3, description="longest training input a+b (Delétang: 40)")
    length_min: int = Field(3, ge=1, description="shortest training input a+b (3: one bit each and the '+')")

    def positions(self, n: int) -> int:
        return 2 * n + 1  # a+b, the separator, then n answer slots (at most n - 1 sum bits and the end)

    def min_length(self) -> tuple[int, str]:
        return 3, "two numbers of at least one bit each and the '+'"
