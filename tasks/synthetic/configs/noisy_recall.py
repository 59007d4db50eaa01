"""Noisy in-context recall (Poli et al. 2024, MAD, Sec. 3 and App. B): noise tokens between the pairs.

Worked example (n_pairs=2, noise=0.5; keys A B, values x y; noise tokens from their own vocabulary n m)::

    input : n m A x m m B y | n B n n A m   (context: 2 pairs among 2 noise pairs; then the queries)
    target: . . . . . . . . | . y . . x .   (. = not scored; "|" only marks the two halves)

The context holds ``n_pairs`` key-value pairs and ``round(n_pairs * noise / (1 - noise))`` pairs of
noise tokens, in a random order, so ``noise`` is the share of context pairs that are noise. Then comes
a query region of ``2 * n_pairs`` positions filled with noise tokens, in which every key appears once
at a random position, and the model must emit that key's value there (the MQAR layout of
``assoc_recall``). Keys come from the lower half of ``vocab``, values from the upper half; noise tokens
are ``noise_vocab`` more. The model must learn to skip the noise vocabulary. Loss and accuracy are
over the query positions only.

Memoryless baseline: a uniform guess among the values, cross-entropy ``ln(n_values)`` and accuracy
``1 / n_values`` with ``n_values = vocab - vocab // 2``. Solved: ``val/acc >= 0.95``.

Differs from MAD's ``generate_noisy_in_context_recall_instance`` (``frac_noise`` 0.2-0.8, 16 noise
tokens): there a noise pair replaces a key-value pair with probability ``frac_noise`` along a fixed
length (more noise, fewer pairs), keys recur and every repeat is scored; here the pairs stay
``n_pairs`` and the noise is added (more noise, a longer context), each key is stored once and
queried once among noise, and training data is a fresh stream (MAD: 12,800 sequences).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TokenTaskConfig, positive_int


@TASKS.config("noisy_recall")
class NoisyRecallConfig(TokenTaskConfig):
    """Noisy in-context recall: key-value pairs among noise tokens, recalled later (MAD)."""

    name: Literal["noisy_recall"] = "noisy_recall"

    vocab: int = Field(32, ge=8, description="key and value tokens; keys 1..vocab//2-1, values vocab//2..vocab-1")
    noise_vocab: int = positive_int("noise tokens, a vocabulary of their own (MAD: 16)", 16)
    n_pairs: int = positive_int("key-value pairs to store (each queried once)", 8)
    noise: float = Field(
        0.5, ge=0.0, lt=1.0, description="share of the context's pairs that are noise (MAD's frac_noise: 0.2-0.8)"
    )

    @model_validator(mode="after")
    def _fits(self):
        if self.n_pairs > self.vocab // 2 - 1:
            raise ValueError(f"task.n_pairs: {self.n_pairs} distinct keys need task.vocab >= {2 * self.n_pairs + 2}")
        return self

    def n_noise(self) -> int:
        """Noise pairs in the context."""
        return round(self.n_pairs * self.noise / (1 - self.noise))

    def seq_len(self) -> int:
        return 2 * (self.n_pairs + self.n_noise()) + 2 * self.n_pairs  # context, then the query region
