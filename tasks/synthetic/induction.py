"""Induction heads: the data (the config and the worked example are in
``tasks/synthetic/configs/induction.py``)."""

from __future__ import annotations

import math

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.induction import InductionConfig  # the config, beside its module


@TASKS.module("induction")
class InductionTask(SyntheticTask, TokenTask):
    cfg: InductionConfig  # the config beside this module

    # tokens: 0..vocab-1 noise and answers, vocab = the trigger
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.vocab, vocab_size=c.vocab + 1, dependency=c.seq_len())

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        if length < 4:
            raise ValueError(f"induction: length {length} leaves no room for a trigger, its token and the query")
        x = torch.randint(0, c.vocab, (batch_size, length), generator=g, device=device)  # (B, T)
        pos = torch.randint(0, length - 2, (batch_size,), generator=g, device=device)  # the first trigger
        rows = torch.arange(batch_size, device=device)
        x[rows, pos] = c.vocab
        answer = x[rows, pos + 1]  # never a trigger: pos + 1 <= length - 2 holds noise
        x[:, -1] = c.vocab
        y = torch.full_like(x, IGNORE)
        y[:, -1] = answer
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        return {"loss": math.log(self.cfg.vocab), "acc": 1.0 / self.cfg.vocab}
