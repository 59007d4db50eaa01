"""Parity: the data (the config and the worked example are in ``tasks/synthetic/configs/parity.py``)."""

from __future__ import annotations

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.parity import ParityConfig  # the config, beside its module
from seqbench.tasks.synthetic.state import free_then_uniform, memoryless_over_lengths, scored_targets


@TASKS.module("parity")
class ParityTask(SyntheticTask, TokenTask):
    cfg: ParityConfig  # the config beside this module

    @property
    def spec(self) -> TaskSpec:
        return self.build_spec(n_classes=2, vocab_size=2, dependency=self.cfg.length)

    def generate(self, g, batch_size, length, device) -> Batch:
        x = torch.randint(0, 2, (batch_size, length), generator=g, device=device)  # (B, T)
        y = scored_targets(x.cumsum(1) % 2, self.cfg.scored)
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        c = self.cfg  # the first bit is its own parity; every later parity is a fair coin given the bit
        return memoryless_over_lengths(free_then_uniform(2, c.length), c.length_min, c.length, c.scored)
