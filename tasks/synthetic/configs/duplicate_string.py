"""Duplicate string: read w, write w w (Delétang et al. 2023, "duplicate string", context-sensitive).

Worked example (problem length n = |w| = 3, alphabet=2; separator ``:``, blank ``_``, ``.`` unscored)::

    input : 1 0 1 : _ _ _ _ _ _
    target: . . . . 1 0 1 1 0 1          positions(n) = 3n + 1

The model reads w, a separator, then 2n blanks, and must write w twice on the blanks (causal: one
output per position). Writing w once is a queue (first in, first out); writing it twice needs the
string read back a second time, out of reach of a stack or a finite state but easy for a tape,
which is why Delétang et al. place it among the context-sensitive tasks.

Training batches each draw a problem length from ``[length_min, length]`` (``LengthRangeConfig``):
train on 1-40, test on longer strings with ``eval.lengths`` (a problem length: ``eval.lengths=[100]``
builds 301 positions).

Memoryless baseline (a model that knows the layout, n and which answer slot it is at, but sees
none of w: every answer position reads a blank): the symbols are uniform and independent, so the
best guess at every slot is uniform over the alphabet, accuracy ``1 / alphabet`` and
cross-entropy ``ln(alphabet)`` at every length (0.5 and ln 2 = 0.693 at the defaults).
Solved: ``val/acc >= 0.95``.

Differs from Delétang et al.: the vocabulary adds a separator and a blank input token (theirs
appends 2n blank positions straight after w, without a separator); a problem length n takes
3n + 1 positions here (their model also reads n + 2n); the accuracy is per-token on the 2n
answer positions, as theirs, and the loss is on those positions only. Their training lengths
are 1-40 as here; they test at 41-500.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import LengthRangeConfig


@TASKS.config("duplicate_string")
class DuplicateStringConfig(LengthRangeConfig):
    """Duplicate string: write the input w twice (context-sensitive); train short, test long."""

    name: Literal["duplicate_string"] = "duplicate_string"

    alphabet: int = Field(2, ge=2, description="distinct symbols of w (Delétang: 2); a uniform guess scores 1/alphabet")

    def positions(self, n: int) -> int:
        return 3 * n + 1  # w, the separator, then the 2n answer slots
