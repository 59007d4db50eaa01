"""Reverse: output the source symbols in reverse order, then <eos>.

The config (no torch) is in ``tasks/synthetic/configs/reverse.py``, where the family is documented."""

from __future__ import annotations

import math

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.synthetic.configs.reverse import ReverseConfig  # the configs, re-exported beside their modules
from seqbench.tasks.synthetic.seq2seq import Seq2SeqTask


@TASKS.module("reverse")
class ReverseTask(Seq2SeqTask):
    cfg: ReverseConfig  # the config beside this module

    def target(self, src):
        return src.flip(1)  # (B, T)

    def baseline(self) -> dict[str, float]:
        T, V = self.cfg.length, self.cfg.vocab
        return {"loss": T * math.log(V) / (T + 1), "token_acc": (T / V + 1) / (T + 1), "exact_match": float(V) ** -T}
