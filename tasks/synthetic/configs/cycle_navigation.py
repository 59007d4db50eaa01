"""Cycle navigation: where on a cycle of ``n_states`` does a walk of left/stay/right moves end?
(Delétang et al. 2023, "cycle navigation", regular.)

Worked example (n_states=5, scored=every; tokens 0 = left (-1), 1 = stay, 2 = right (+1), as in
Delétang)::

    moves : +1 -1  0 -1 -1
    input :  2  0  1  0  0
    target:  1  0  0  4  3       the position so far, starting at 0 (Delétang's example: class 3)

With ``scored=last`` only the final position is scored (one label per sequence, as in Delétang).
It is the word problem of Z_n on the generators {-1, 0, +1}: a recurrence with ``n_states`` states
solves it at every length.

Training batches each draw a length from ``[length_min, length]`` (``LengthRangeConfig``):
train on 1-40, test on longer lengths with ``eval.lengths`` (Delétang et al.'s protocol).

Memoryless baseline (sees the current move and its position, nothing earlier): the position after
``t`` moves is the current move plus the position after the ``t - 1`` before it, which is
independent of the current move and distributed as a sum of ``t - 1`` uniform moves mod n (``p_{t-1}``:
a point mass on 0 for ``t = 1``, then spreading towards uniform). The best guess shifts ``p_{t-1}``
by the current move: accuracy ``max_k p_{t-1}(k)``, cross-entropy the entropy ``H(p_{t-1})`` (1 and 0
at the first position, 1/3 and ln 3 at the second when n >= 3, 1/n and ln n in the limit).
``scored=last``: these at the last position, averaged over the drawn lengths; ``scored=every``:
accuracy over all scored positions, loss the mean of each length's per-position loss. At the
defaults (n=5, lengths 1-40, last): accuracy 0.2300, loss 1.55339 (against 0.2 and ln 5 = 1.60944
for a long walk). Solved: ``val/acc >= 0.95``.

Differs from Delétang et al.: their cycle has 5 states, fixed; the model reads the moves and then
answers at an extra query position, where here the answer is read off the last input position.
Their training lengths are 1-40 as here; they test at 41-500.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import LengthRangeConfig


@TASKS.config("cycle_navigation")
class CycleNavigationConfig(LengthRangeConfig):
    """Walk left/stay/right on a cycle; name the position (Delétang's cycle navigation); train short, test long."""

    name: Literal["cycle_navigation"] = "cycle_navigation"

    n_states: int = Field(5, ge=2, description="positions on the cycle, the automaton's states (Delétang: 5)")
    scored: Literal["last", "every"] = Field(
        "last", description="last: one label per sequence (Delétang); every: the position after each move"
    )
