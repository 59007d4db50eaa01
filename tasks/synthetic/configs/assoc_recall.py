"""Multi-query associative recall, MQAR (Arora et al. 2023, Zoology).

Worked example (n_pairs=2; keys A B, values x y; noise=_)::

    input : A x B y _ B _ _ A _
    target: . . . . . y . . x .      (. = not scored)

The sequence opens with ``n_pairs`` distinct key-value pairs; every key is then queried
once at a random later position, and the model must emit that key's value there. Keys
come from the lower half of the vocabulary, values from the upper half. Loss and
accuracy are over query positions only.

Memoryless baseline: a uniform guess among the values, cross-entropy
``ln(n_values)`` and accuracy ``1 / n_values`` with ``n_values = vocab - vocab // 2``.
Solved: ``val/acc >= 0.95``.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TokenTaskConfig, positive_int


@TASKS.config("assoc_recall")
class AssocRecallConfig(TokenTaskConfig):
    """Multi-query associative recall: store key-value pairs, answer queries later."""

    name: Literal["assoc_recall"] = "assoc_recall"

    vocab: int = Field(64, ge=8, description="token ids; keys use 1..vocab//2-1, values vocab//2..vocab-1")
    n_pairs: int = positive_int("key-value pairs to store (each queried once)", 8)
    length: int = positive_int("total sequence length (pairs + query region)", 64)

    @model_validator(mode="after")
    def _fits(self):
        if self.n_pairs > self.vocab // 2 - 1:
            raise ValueError(f"task.n_pairs: {self.n_pairs} distinct keys need task.vocab >= {2 * self.n_pairs + 2}")
        if self.length < 3 * self.n_pairs:
            raise ValueError(
                f"task.length: {self.length} is too short for {self.n_pairs} pairs and their queries; "
                f"use length >= {3 * self.n_pairs}"
            )
        return self

    def seq_len(self) -> int:
        return self.length

    def min_length(self) -> tuple[int, str]:
        n = self.n_pairs
        return 3 * n, f"{n} key-value pairs (task.n_pairs: {2 * n} steps) and {n} query steps"
