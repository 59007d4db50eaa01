"""Copy memory (Hochreiter & Schmidhuber 1997; Arjovsky, Shah & Bengio 2016).

Worked example (n_symbols=3, alphabet=4, delay=4; blank=_, delimiter=:)::

    input : a b c _ _ _ : _ _ _
    target: _ _ _ _ _ _ _ a b c

The model reads ``n_symbols`` random symbols, waits ``delay - 1`` blanks, sees the
delimiter, and must reproduce the symbols in order during the last ``n_symbols`` steps.
Total length is ``delay + 2 * n_symbols``; the loss is cross-entropy over every step
(as in Arjovsky et al.), accuracy is over the recalled symbols only.

Memoryless baseline: predict blank everywhere except the last ``n_symbols`` steps and
a uniform guess there, cross-entropy ``n_symbols * ln(alphabet) / (delay + 2 n_symbols)``
and recall accuracy ``1 / alphabet``. Solved: ``val/acc >= 0.95``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TokenTaskConfig, positive_int


@TASKS.config("copy")
class CopyConfig(TokenTaskConfig):
    """Copy memory: remember n_symbols symbols across a delay, then reproduce them."""

    name: Literal["copy"] = "copy"

    n_symbols: int = positive_int("symbols to remember (10 in Arjovsky et al.)", 10)
    alphabet: int = Field(8, ge=2, description="distinct symbols; uniform guess accuracy is 1/alphabet")
    delay: int = positive_int("steps between the last symbol and the first recall (blanks + delimiter)", 50)

    def seq_len(self) -> int:
        return self.delay + 2 * self.n_symbols

    def min_length(self) -> tuple[int, str]:
        n = self.n_symbols
        return 2 * n + 1, f"{n} symbols (task.n_symbols), a delay of at least 1 step and {n} recall steps"
