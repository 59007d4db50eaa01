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
from seqbench.tasks.synthetic.seq2seq import Seq2SeqTaskConfig


@TASKS.config("sort")
class SortConfig(Seq2SeqTaskConfig):
    """Sort: output the source symbols in ascending order, then <eos>."""

    name: Literal["sort"] = "sort"


# -- torch below: the modules. Everything above imports without torch (bench/core/configs_only.py).
import math

from seqbench.tasks.synthetic.seq2seq import Seq2SeqTask


def _binom_sf_all(n: int, p: float) -> list[float]:
    """[P(Binomial(n, p) >= k) for k in 0..n], from the pmf in log space (no overflow)."""
    if p <= 0.0 or p >= 1.0:
        return [1.0] + [float(p >= 1.0)] * n
    lp, lq = math.log(p), math.log1p(-p)
    pmf = [math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq)
           for j in range(n + 1)]
    sf, acc = [0.0] * (n + 1), 0.0
    for j in range(n, -1, -1):
        acc += pmf[j]
        sf[j] = min(1.0, acc)
    return sf


def order_statistic_pmfs(n: int, vocab: int) -> list[list[float]]:
    """pmf[k][v]: probability that the (k+1)-th smallest of n uniform draws is symbol v."""
    sf = [_binom_sf_all(n, v / vocab) for v in range(vocab + 1)]  # sf[v][k] = P(X_(k) <= v-th symbol)
    return [[max(0.0, sf[v + 1][k] - sf[v][k]) for v in range(vocab)] for k in range(1, n + 1)]


@TASKS.module("sort")
class SortTask(Seq2SeqTask):
    def target(self, src):
        return src.sort(1).values  # (B, T)

    def baseline(self) -> dict[str, float]:
        T, V = self.cfg.length, self.cfg.vocab
        pmfs = order_statistic_pmfs(T, V)
        entropy = sum(-sum(p * math.log(p) for p in pmf if p > 0) for pmf in pmfs)
        hits = sum(max(pmf) for pmf in pmfs)
        q, r = divmod(T, V)  # most likely multiset: counts as even as possible
        log_p = (math.lgamma(T + 1) - r * math.lgamma(q + 2) - (V - r) * math.lgamma(q + 1) - T * math.log(V))
        return {"loss": entropy / (T + 1), "token_acc": (hits + 1) / (T + 1), "exact_match": math.exp(log_p)}
