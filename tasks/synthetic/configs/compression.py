"""Compression (Poli et al. 2024, MAD, Sec. 3 and App. B): reproduce a sequence from one summary position.

Worked example (length=4, alphabet=3, symbols a b c; summary token =)::

    input : b a c b =
    output: from the features at "=" alone: b a c b   (4 x 3 logits from one position)

``length`` random symbols, then a summary token; the model's head reads the features of the summary
(last) position only, a pooled output of ``length x alphabet`` logits, and must reproduce every
symbol: all the sequence has to pass through one position's state. Loss is the mean cross-entropy
over the ``length`` symbols, accuracy the share reproduced. At an evaluation length longer than
``length + 1`` the symbols are preceded by blanks (more distance, the same answer).

Memoryless baseline: symbols are uniform and independent, so a model that sees only the summary
token guesses: cross-entropy ``ln(alphabet)`` and accuracy ``1 / alphabet``. Solved: ``val/acc >= 0.95``.

Differs from MAD's ``generate_compression_instance`` and its ``AutoEncoder``: MAD (vocabulary 16 with
the compression token, sequence 32) decodes the compression token's embedding with a two-layer MLP
plus a sinusoidal position embedding per reconstructed position; here the model's ordinary linear
head emits all ``length x alphabet`` logits from the summary features (no decoder MLP, no decoder
positions), ``alphabet`` counts symbols only, and training data is a fresh stream (MAD: 12,800).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.contract import Goal, MetricDef, OutputKind, TaskFacts
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TaskConfig, positive_int


@TASKS.config("compression")
class CompressionConfig(TaskConfig):
    """Compression: reproduce a random sequence from the features of one summary position (MAD)."""

    name: Literal["compression"] = "compression"
    facts = TaskFacts(OutputKind.CLASS, causal=True, metrics=(MetricDef("acc", Goal.MAX),), primary="acc")

    length: int = positive_int("symbols to reproduce (MAD: 31 before its compression token)", 31)
    alphabet: int = Field(15, ge=2, description="distinct symbols (MAD: 15 besides the compression token)")

    def seq_len(self) -> int:
        return self.length + 1  # the symbols and the summary token
