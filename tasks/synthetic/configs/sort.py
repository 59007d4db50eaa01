"""Sorting, a synthetic sequence-to-sequence task.

Worked example (length=5; ids shown as letters, a < b < c)::

    source : c a b a c
    target : a a b c c <eos>        decoder input: <sos> a a b c c

The target is the multiset of source symbols in ascending id order: every output
depends on counting the whole source, not on one aligned position.

Memoryless baseline (a decoder that never sees the source) predicts, at sorted position
k, the distribution of the k-th order statistic of ``length`` i.i.d. uniform symbols:
``P(X_(k) <= v) = P(Binomial(length, v / vocab) >= k)``. Its cross-entropy is the mean
entropy of those distributions (with a certain <eos>), its token accuracy the mean of
their modes' probabilities, and its exact match the probability of the most likely
sorted sequence (symbol counts as even as possible). Solved: ``val/exact_match >= 0.9``.
"""

from __future__ import annotations

from typing import Literal

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.synthetic.configs.seq2seq import Seq2SeqTaskConfig


@TASKS.config("sort")
class SortConfig(Seq2SeqTaskConfig):
    """Sort: output the source symbols in ascending order, then <eos>."""

    name: Literal["sort"] = "sort"
