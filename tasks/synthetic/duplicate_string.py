"""Duplicate string: the data (the config and the worked example are in
``tasks/synthetic/configs/duplicate_string.py``)."""

from __future__ import annotations

import math

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.duplicate_string import DuplicateStringConfig  # the config, beside its module


@TASKS.module("duplicate_string")
class DuplicateStringTask(SyntheticTask, TokenTask):
    cfg: DuplicateStringConfig  # the config beside this module

    # input tokens: 0..alphabet-1 = symbols, alphabet = separator, alphabet+1 = blank; targets: the symbols
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        # the last answer (the second copy's last symbol) is 2n+1 positions after its source
        return self.build_spec(n_classes=c.alphabet, vocab_size=c.alphabet + 2, dependency=2 * c.length + 1)

    def generate(self, g, batch_size, length, device) -> Batch:
        c, n = self.cfg, length
        if n < 1:
            raise ValueError(f"duplicate_string: problem length {n} < 1 (the string needs a symbol)")
        w = torch.randint(0, c.alphabet, (batch_size, n), generator=g, device=device)  # (B, n)
        x = torch.full((batch_size, c.positions(n)), c.alphabet + 1, dtype=torch.long, device=device)  # (B, 3n+1)
        x[:, :n] = w
        x[:, n] = c.alphabet  # separator
        y = torch.full_like(x, IGNORE)
        y[:, n + 1 :] = w.repeat(1, 2)  # (B, 2n): w w
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        a = self.cfg.alphabet  # uniform, independent symbols: the same guess at every slot and length
        return {"loss": math.log(a), "acc": 1.0 / a}
