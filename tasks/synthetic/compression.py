"""Compression: the data, loss and metrics (the config and the worked example are in
``tasks/synthetic/configs/compression.py``)."""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.compression import CompressionConfig  # the config, beside its module


@TASKS.module("compression")
class CompressionTask(SyntheticTask, TokenTask):
    cfg: CompressionConfig  # the config beside this module

    # tokens: 0..alphabet-1 symbols, alphabet = blank (longer evaluation lengths), alphabet+1 = summary.
    # The pooled head's (B, length * alphabet) logits are read as (B, length, alphabet).
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(
            n_classes=c.length * c.alphabet, vocab_size=c.alphabet + 2, dependency=c.seq_len(), pooling="last"
        )

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        if length < c.seq_len():
            raise ValueError(f"compression: length {length} is shorter than {c.length} symbols and the summary")
        y = torch.randint(0, c.alphabet, (batch_size, c.length), generator=g, device=device)  # (B, length)
        x = torch.full((batch_size, length), c.alphabet, dtype=torch.long, device=device)
        x[:, -1 - c.length : -1] = y
        x[:, -1] = c.alphabet + 1
        return Batch(x=x, y=y)

    def _logits(self, out: torch.Tensor) -> torch.Tensor:
        return out.view(out.shape[0], self.cfg.length, self.cfg.alphabet)  # (B, length, alphabet)

    def loss(self, out: torch.Tensor, batch: Batch) -> torch.Tensor:
        return F.cross_entropy(self._logits(out).flatten(0, 1), batch.y.flatten())

    def update_metrics(self, metrics, out, batch, net=None) -> None:
        metrics["acc"].update(self._logits(out).argmax(-1), batch.y, torch.ones_like(batch.y, dtype=torch.bool))

    def baseline(self) -> dict[str, float]:
        return {"loss": math.log(self.cfg.alphabet), "acc": 1.0 / self.cfg.alphabet}
