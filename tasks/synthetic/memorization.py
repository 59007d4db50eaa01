"""Memorization: the data and the map's baseline (the config and the worked example are in
``tasks/synthetic/configs/memorization.py``)."""

from __future__ import annotations

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.memorization import MemorizationConfig  # the config, beside its module


def fixed_map(n_keys: int, n_values: int, map_seed: int) -> torch.Tensor:
    """(n_keys,) the value of each key, from the task's own seed (on the CPU: the same on every device)."""
    g = torch.Generator().manual_seed(map_seed)
    return torch.randint(0, n_values, (n_keys,), generator=g)


@TASKS.module("memorization")
class MemorizationTask(SyntheticTask, TokenTask):
    cfg: MemorizationConfig  # the config beside this module

    # tokens: 0..n_keys-1 keys, n_keys = the insert token; classes: the values
    def __init__(self, cfg, seed: int = 0):
        super().__init__(cfg, seed)
        self.map = fixed_map(cfg.n_keys, cfg.values(), cfg.map_seed)

    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.values(), vocab_size=c.n_keys + 1, dependency=2)

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        keys = torch.randint(0, c.n_keys, (batch_size, (length + 1) // 2), generator=g, device=device)
        x = torch.full((batch_size, length), c.n_keys, dtype=torch.long, device=device)
        x[:, 0::2] = keys
        y = torch.full_like(x, IGNORE)
        y[:, 1::2] = self.map.to(device)[keys[:, : length // 2]]  # each insert token asks for its key's value
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        p = torch.bincount(self.map, minlength=self.cfg.values()).double() / self.cfg.n_keys
        entropy = -float((p[p > 0] * p[p > 0].log()).sum())
        return {"loss": entropy, "acc": float(p.max())}
