"""Memorization (Poli et al. 2024, MAD, Sec. 3 and App. B): a fixed key-value map learned in the weights.

Worked example (n_keys=4, keys k0..k3, the map k0->v2, k1->v0, k2->v2, k3->v1; insert token ?)::

    input : k1 ? k3 ? k0 ? k1 ?
    target: .  v0 . v1 .  v2 . v0     (. = not scored)

The map from ``n_keys`` keys to ``n_values`` values (default: as many as keys) is drawn once from
``map_seed``, a seed of the task, not of the run: every run and every seed learns the same facts, and
only the initialisation and the data order differ. Sequences are random keys, each followed by an insert
token at which the model must emit the key's value. Nothing in the sequence tells the answer: it has to be stored in the
weights, so ``n_keys`` (the number of facts) is the difficulty knob.

Memoryless baseline: a model that sees only the insert token can only guess from the map's value
frequencies (keys are uniform): cross-entropy = the entropy of the map's value histogram, accuracy =
the share of keys mapped to the most common value (``ln(n_values)`` and ``1 / n_values`` only when the
map is a bijection). Solved: ``val/acc >= 0.95``.

Differs from MAD's ``generate_memorization_instance``: MAD's map is a bijection from one half of the
vocabulary onto the other (vocabulary 256-8192, so 127-4095 facts), seeded by the run's seed, and
trains on a fixed set of 256 sequences of 32 tokens for 200 epochs; here each key's value is an
independent draw (several keys may share a value), the map's seed is the task's own, and training
sees a fresh stream of sequences of the same facts.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.configs.base import TokenTaskConfig


@TASKS.config("memorization")
class MemorizationConfig(TokenTaskConfig):
    """Memorization: learn a fixed key-value map in the weights (MAD)."""

    name: Literal["memorization"] = "memorization"

    n_keys: int = Field(128, ge=2, description="facts to store: keys of the fixed map (MAD: 127-4095)")
    n_values: int | None = Field(
        None,
        ge=2,
        description="values the keys map to, drawn per key (some repeat); "
        "null = as many as keys, MAD's size (its map is a bijection)",
    )
    length: int = Field(32, ge=2, description="positions per sequence, key and insert token alternating (MAD: 32)")
    map_seed: int = Field(
        12345,
        ge=0,
        description="the map's seed, the task's own: every run learns the same facts (MAD's default seed 12345)",
    )

    def values(self) -> int:
        """The number of values (``n_values``, or one per key)."""
        return self.n_keys if self.n_values is None else self.n_values

    def seq_len(self) -> int:
        return self.length
