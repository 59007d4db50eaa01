"""Copy memory: the data and metrics.

The config (no torch) is in ``tasks/synthetic/configs/copy.py``, where the family is documented."""

from __future__ import annotations

import math

import torch

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.copy import CopyConfig  # the configs, re-exported beside their modules


@TASKS.module("copy")
class CopyTask(SyntheticTask, TokenTask):
    cfg: CopyConfig  # the config beside this module

    # tokens: 0 = blank, 1..alphabet = symbols, alphabet+1 = delimiter
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.alphabet + 1, vocab_size=c.alphabet + 2, dependency=c.delay + c.n_symbols)

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        n = c.n_symbols
        delay = length - 2 * n  # evaluating at another length stretches the delay
        if delay < 1:
            raise ValueError(f"copy: length {length} leaves no delay for n_symbols={n}")
        symbols = torch.randint(1, c.alphabet + 1, (batch_size, n), generator=g, device=device)
        x = torch.zeros(batch_size, length, dtype=torch.long, device=device)
        x[:, :n] = symbols
        x[:, n + delay - 1] = c.alphabet + 1  # delimiter
        y = torch.zeros_like(x)
        y[:, -n:] = symbols
        score = torch.zeros_like(x, dtype=torch.bool)
        score[:, -n:] = True
        return Batch(x=x, y=y, score_mask=score)

    def baseline(self) -> dict[str, float]:
        c = self.cfg
        return {"loss": c.n_symbols * math.log(c.alphabet) / c.seq_len(), "acc": 1.0 / c.alphabet}
