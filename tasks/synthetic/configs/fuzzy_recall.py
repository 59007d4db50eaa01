"""Fuzzy in-context recall (Poli et al. 2024, MAD, Sec. 3 and App. B): keys and values span several tokens.

Worked example (n_pairs=2, key_len=2, value_len=2; key tokens A B, value tokens x y; pad=_)::

    input : _ _ _ _ _ _ A B x B y | B y A B x   (context: A B -> x, B -> y; then each pair again, shuffled)
    target: . . . . . . . . . . . | y . . x .   (. = not scored; "|" only marks the two halves)

Each key is 1..``key_len`` key tokens and each value 1..``value_len`` value tokens, their lengths drawn
per pair, so a pair's boundaries are only visible through which half of the vocabulary a token comes
from: the model has to group adjacent tokens into one unit. The sequence holds ``n_pairs`` pairs,
then every pair again in a random order; on that second pass the model must emit each value token
at the position before it (the last key token predicts the first value token, each value token the
next one), as a language model would. Rows shorter than the longest layout are padded at the front.

Memoryless baseline: value tokens are drawn uniformly and independently, so a model that sees only
the current token guesses among the values: cross-entropy ``ln(n_values)`` and accuracy
``1 / n_values`` with ``n_values = vocab - vocab // 2``. Solved: ``val/acc >= 0.95``.

Differs from MAD's ``generate_fuzzy_in_context_recall_instance``: MAD samples keys (with repeats) along
a fixed length and scores every repeat of an earlier key (its multi-query form), draws a motif's tokens
without repetition, and prompts test keys at the full ``k_motif_size``; here the number of pairs is
the difficulty knob (MAD varies length, vocabulary and training-set size), every pair is stored once
and queried once (the MQAR layout of ``assoc_recall``), tokens inside a motif are independent draws, a
key drawn twice keeps its first value, and training data is a fresh stream (MAD: 12,800 sequences).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TokenTaskConfig, positive_int


@TASKS.config("fuzzy_recall")
class FuzzyRecallConfig(TokenTaskConfig):
    """Fuzzy in-context recall: multi-token keys and values, recalled in context (MAD)."""

    name: Literal["fuzzy_recall"] = "fuzzy_recall"

    vocab: int = Field(16, ge=4, description="key and value tokens (MAD: 16); keys the lower half, values the upper")
    n_pairs: int = positive_int("key-value pairs stored and then queried once each", 4)
    key_len: int = positive_int("longest key in tokens (MAD's k_motif_size: 3); each key has 1..key_len", 3)
    value_len: int = positive_int("longest value in tokens (MAD's v_motif_size: 3); each has 1..value_len", 3)

    def seq_len(self) -> int:
        return 2 * self.n_pairs * (self.key_len + self.value_len)  # the longest layout; shorter rows are padded
