"""Sort: output the source symbols in ascending order, then <eos>.

The config (no torch) is in ``tasks/synthetic/configs/sort.py``, where the family is documented."""

from __future__ import annotations

import math

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.synthetic.configs.sort import SortConfig  # the configs, re-exported beside their modules
from seqbench.tasks.synthetic.seq2seq import Seq2SeqTask


def _binom_sf_all(n: int, p: float) -> list[float]:
    """[P(Binomial(n, p) >= k) for k in 0..n], from the pmf in log space (no overflow)."""
    if p <= 0.0 or p >= 1.0:
        return [1.0] + [float(p >= 1.0)] * n
    lp, lq = math.log(p), math.log1p(-p)
    pmf = [
        math.exp(math.lgamma(n + 1) - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq)
        for j in range(n + 1)
    ]
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
    cfg: SortConfig  # the config beside this module

    def target(self, src):
        return src.sort(1).values  # (B, T)

    def baseline(self) -> dict[str, float]:
        T, V = self.cfg.length, self.cfg.vocab
        pmfs = order_statistic_pmfs(T, V)
        entropy = sum(-sum(p * math.log(p) for p in pmf if p > 0) for pmf in pmfs)
        hits = sum(max(pmf) for pmf in pmfs)
        q, r = divmod(T, V)  # most likely multiset: counts as even as possible
        log_p = math.lgamma(T + 1) - r * math.lgamma(q + 2) - (V - r) * math.lgamma(q + 1) - T * math.log(V)
        return {"loss": entropy / (T + 1), "token_acc": (hits + 1) / (T + 1), "exact_match": math.exp(log_p)}
