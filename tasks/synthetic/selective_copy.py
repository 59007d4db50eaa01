"""Selective copying: the data and metrics.

The config (no torch) is in ``tasks/synthetic/configs/selective_copy.py``, where the family is documented."""

from __future__ import annotations

import math

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.selective_copy import (  # the configs, re-exported beside their modules
    SelectiveCopyConfig,
)


@TASKS.module("selective_copy")
class SelectiveCopyTask(SyntheticTask, TokenTask):
    cfg: SelectiveCopyConfig  # the config beside this module

    # tokens: 0 = blank, 1..alphabet = symbols, alphabet+1 = marker
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.alphabet + 1, vocab_size=c.alphabet + 2, dependency=c.seq_len())

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        n = c.n_symbols
        span = length - n  # scatter region at this (possibly longer) evaluation length
        if span < n:
            raise ValueError(f"selective_copy: length {length} is too short for {n} symbols")
        pos = torch.rand(batch_size, span, generator=g, device=device).argsort(-1)[:, :n]
        pos = pos.sort(-1).values  # (B, n) increasing positions
        symbols = torch.randint(1, c.alphabet + 1, (batch_size, n), generator=g, device=device)
        x = torch.zeros(batch_size, length, dtype=torch.long, device=device)
        x.scatter_(1, pos, symbols)
        x[:, span:] = c.alphabet + 1
        y = torch.full_like(x, IGNORE)
        y[:, span:] = symbols
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        return {"loss": math.log(self.cfg.alphabet), "acc": 1.0 / self.cfg.alphabet}
