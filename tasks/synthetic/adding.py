"""Adding problem: the data and metrics.

The config (no torch) is in ``tasks/synthetic/configs/adding.py``, where the family is documented."""

from __future__ import annotations

import torch
import torchmetrics

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import Task
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.adding import (  # the configs, re-exported beside their modules
    SOLVED_MSE,
    AddingConfig,
)


@TASKS.module("adding")
class AddingTask(SyntheticTask, Task):
    cfg: AddingConfig  # the config beside this module

    @property
    def spec(self) -> TaskSpec:
        return self.build_spec(n_classes=1, input_dim=2, dependency=self.cfg.length)

    def generate(self, g, batch_size, length, device) -> Batch:
        half = length // 2
        values = torch.rand(batch_size, length, generator=g, device=device)
        first = torch.randint(0, half, (batch_size,), generator=g, device=device)
        second = torch.randint(half, length, (batch_size,), generator=g, device=device)
        markers = torch.zeros(batch_size, length, device=device)
        rows = torch.arange(batch_size, device=device)
        markers[rows, first] = 1.0
        markers[rows, second] = 1.0
        x = torch.stack([values, markers], dim=-1)  # (B, T, 2)
        y = values[rows, first] + values[rows, second]  # (B,)
        return Batch(x=x, y=y)

    def metrics(self):
        return {"mse": torchmetrics.MeanSquaredError()}

    def update_metrics(self, metrics, out, batch, net=None) -> None:
        metrics["mse"].update(out.float(), batch.y.float())

    def baseline(self) -> dict[str, float]:
        return {"loss": 1.0 / 6.0, "mse": 1.0 / 6.0}

    def solved(self, metrics, split="val") -> bool:
        return metrics.get(f"{split}/mse", float("inf")) < SOLVED_MSE
