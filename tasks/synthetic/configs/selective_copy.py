"""Selective copying (Gu & Dao 2023, the Mamba paper).

Worked example (length=8, n_symbols=3; blank=_, marker=?)::

    input : _ a _ _ b _ c _ ? ? ?
    target: . . . . . . . . a b c      (. = not scored)

``n_symbols`` symbols sit at random positions among ``length`` blanks; after them come
``n_symbols`` markers, at which the model must emit the symbols in order. Unlike
``copy``, the spacing varies per sequence, so a fixed-delay filter cannot solve it.
Loss and accuracy are over the answer positions only.

Memoryless baseline: a uniform guess, cross-entropy ``ln(alphabet)`` and accuracy
``1 / alphabet``. Solved: ``val/acc >= 0.95``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TokenTaskConfig, positive_int


@TASKS.config("selective_copy")
class SelectiveCopyConfig(TokenTaskConfig):
    """Selective copying: find symbols scattered among blanks and output them in order."""

    name: Literal["selective_copy"] = "selective_copy"

    length: int = positive_int("positions the symbols are scattered over", 64)
    n_symbols: int = positive_int("symbols to find and reproduce in order", 8)
    alphabet: int = Field(8, ge=2, description="distinct symbols")

    @model_validator(mode="after")
    def _fits(self):
        if self.n_symbols > self.length:
            raise ValueError(
                f"task.n_symbols: {self.n_symbols} symbols do not fit in task.length={self.length}; "
                "lower n_symbols or raise length"
            )
        return self

    def seq_len(self) -> int:
        return self.length + self.n_symbols

    def min_length(self) -> tuple[int, str]:
        n = self.n_symbols
        return 2 * n, f"{n} symbols (task.n_symbols) scattered over at least {n} steps, then {n} recall steps"
