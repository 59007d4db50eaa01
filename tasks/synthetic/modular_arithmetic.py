"""Modular arithmetic: the data (the config and the worked example are in
``tasks/synthetic/configs/modular_arithmetic.py``)."""

from __future__ import annotations

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.modular_arithmetic import ModularArithmeticConfig  # the config, beside its module
from seqbench.tasks.synthetic.state import free_then_uniform, memoryless_over_lengths, scored_targets


@TASKS.module("modular_arithmetic")
class ModularArithmeticTask(SyntheticTask, TokenTask):
    cfg: ModularArithmeticConfig  # the config beside this module

    # tokens: the numbers 0..m-1; classes: the sums 0..m-1
    @property
    def spec(self) -> TaskSpec:
        m = self.cfg.modulus
        return self.build_spec(n_classes=m, vocab_size=m, dependency=self.cfg.length)

    def generate(self, g, batch_size, length, device) -> Batch:
        m = self.cfg.modulus
        x = torch.randint(0, m, (batch_size, length), generator=g, device=device)  # (B, T)
        y = scored_targets(x.cumsum(1) % m, self.cfg.scored)
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        c = self.cfg
        return memoryless_over_lengths(free_then_uniform(c.modulus, c.length), c.length_min, c.length, c.scored)
