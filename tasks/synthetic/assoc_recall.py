"""Multi-query associative recall: the data and metrics.

The config (no torch) is in ``tasks/synthetic/configs/assoc_recall.py``, where the family is documented."""

from __future__ import annotations

import math

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.assoc_recall import (  # the configs, re-exported beside their modules
    AssocRecallConfig,
)


@TASKS.module("assoc_recall")
class AssocRecallTask(SyntheticTask, TokenTask):
    cfg: AssocRecallConfig  # the config beside this module

    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.vocab, vocab_size=c.vocab, dependency=c.length)

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        n, half = c.n_pairs, c.vocab // 2
        region = length - 2 * n  # query region at this (possibly longer) length
        if region < n:
            raise ValueError(f"assoc_recall: length {length} is too short for {n} pairs")
        keys = torch.rand(batch_size, half - 1, generator=g, device=device).argsort(-1)[:, :n] + 1
        values = torch.randint(half, c.vocab, (batch_size, n), generator=g, device=device)
        x = torch.zeros(batch_size, length, dtype=torch.long, device=device)
        x[:, 0 : 2 * n : 2] = keys
        x[:, 1 : 2 * n : 2] = values
        # each key queried once, at distinct random positions in the query region
        qpos = torch.rand(batch_size, region, generator=g, device=device).argsort(-1)[:, :n] + 2 * n
        order = torch.rand(batch_size, n, generator=g, device=device).argsort(-1)  # which key goes where
        x.scatter_(1, qpos, keys.gather(1, order))
        y = torch.full_like(x, IGNORE)
        y.scatter_(1, qpos, values.gather(1, order))
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        n_values = self.cfg.vocab - self.cfg.vocab // 2
        return {"loss": math.log(n_values), "acc": 1.0 / n_values}
