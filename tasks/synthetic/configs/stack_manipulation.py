"""Stack manipulation: run push/pop actions on a stack, write the final stack (Delétang et al. 2023,
"stack manipulation", deterministic context-free).

Worked example (problem length n = 7, the whole input; actions ``-`` POP, ``A`` PUSH 0, ``B``
PUSH 1; separator ``:``, blank ``_``, end ``$``, ``.`` unscored)::

    input : 0 1 1 0 B - - : _ _ _ _ _ _ _ _
    target: . . . . . . . . 1 1 0 $ . . . .       positions(n) = 2n + 2

    stack 0 1 1 0 (bottom to top); PUSH 1: 0 1 1 0 1; POP: 0 1 1 0; POP: 0 1 1
    -> the final stack top to bottom: 1 1 0, then the end token

The input is an initial stack of s uniform bits (bottom to top, s uniform in 1..n-1), then
n - s actions, each uniform among POP, PUSH 0, PUSH 1; a POP on an empty stack does nothing
(n = 1: a one-bit stack, no action). The answer is the final stack top to bottom, then the end
token, in a fixed width of n + 1 slots (the stack holds at most n bits), so every batch of one
length has one layout; the slots after the end token are neither trained nor scored. A stack
solves it exactly, and so does a model that can emulate one.

Training batches each draw a problem length from ``[length_min, length]`` (``LengthRangeConfig``):
train on 1-40, test on longer inputs with ``eval.lengths``.

Memoryless baseline (a model that knows the layout, n and which answer slot it is at, but sees
none of the input: every answer position reads a blank): each stack bit is a fair coin whatever
the actions did (pushes of 0 and 1 are equally likely), so with H the final stack's height the
slot j holds a bit with probability P(H > j), split evenly between 0 and 1, and the end token with
probability P(H = j). The best guess at slot j scores ``max(P(H = j), P(H > j) / 2)``, with
cross-entropy the entropy of (P(H = j), P(H > j)/2, P(H > j)/2) given that the slot is scored.
H's distribution is exact: a dynamic programme over the input, mixing in the samples whose
actions start at each position, each action a step +1 (push, 2/3) or -1 (pop, 1/3) held at 0.
Accuracy micro-averages the scored tokens over the drawn lengths (``sum_n E[correct_n] /
sum_n E[scored_n]``), the loss is the mean over lengths of each length's mean per scored
position: acc 0.4866, loss 0.7798 at the defaults (lengths 1-40). Solved: ``val/acc >= 0.95``.

Differs from Delétang et al.: the vocabulary adds a separator and a blank input token (theirs
appends the answer's blanks straight after the input); their answer has n + 1 slots padded with
zeros after the end token and their loss covers the padding, while here the padding is neither
trained nor scored; the accuracy is per-token up to and including the end token, as theirs.
Their training lengths are 1-40 as here; they test at 41-500.
"""

from __future__ import annotations

from typing import Literal

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import LengthRangeConfig


@TASKS.config("stack_manipulation")
class StackManipulationConfig(LengthRangeConfig):
    """Stack manipulation: apply POP / PUSH 0 / PUSH 1 to a stack, write it top to bottom (DCF)."""

    name: Literal["stack_manipulation"] = "stack_manipulation"

    def positions(self, n: int) -> int:
        return 2 * n + 2  # the input, the separator, then n + 1 answer slots (at most n bits and the end)
