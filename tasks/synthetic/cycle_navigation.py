"""Cycle navigation: the data (the config and the worked example are in
``tasks/synthetic/configs/cycle_navigation.py``)."""

from __future__ import annotations

import math

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.cycle_navigation import CycleNavigationConfig  # the config, beside its module
from seqbench.tasks.synthetic.state import memoryless_over_lengths, scored_targets


def walk_distributions(n_states: int, steps: int) -> list[list[float]]:
    """``p_k`` for ``k = 0..steps-1``: the distribution of the position after ``k`` uniform moves in
    {-1, 0, +1} from 0 on a cycle of ``n_states``."""
    p = [1.0] + [0.0] * (n_states - 1)
    out = []
    for _ in range(steps):
        out.append(p)
        p = [sum(p[(k - d) % n_states] for d in (-1, 0, 1)) / 3 for k in range(n_states)]
    return out


@TASKS.module("cycle_navigation")
class CycleNavigationTask(SyntheticTask, TokenTask):
    cfg: CycleNavigationConfig  # the config beside this module

    # tokens: 0 = left (-1), 1 = stay, 2 = right (+1); classes: the positions 0..n_states-1
    @property
    def spec(self) -> TaskSpec:
        return self.build_spec(n_classes=self.cfg.n_states, vocab_size=3, dependency=self.cfg.length)

    def generate(self, g, batch_size, length, device) -> Batch:
        x = torch.randint(0, 3, (batch_size, length), generator=g, device=device)  # (B, T)
        y = scored_targets((x - 1).cumsum(1) % self.cfg.n_states, self.cfg.scored)
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        c = self.cfg
        per_position = [
            (max(p), -sum(q * math.log(q) for q in p if q > 0)) for p in walk_distributions(c.n_states, c.length)
        ]
        return memoryless_over_lengths(per_position, c.length_min, c.length, c.scored)
