"""Noisy in-context recall: the data (the config and the worked example are in
``tasks/synthetic/configs/noisy_recall.py``)."""

from __future__ import annotations

import math

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.noisy_recall import NoisyRecallConfig  # the config, beside its module


@TASKS.module("noisy_recall")
class NoisyRecallTask(SyntheticTask, TokenTask):
    cfg: NoisyRecallConfig  # the config beside this module

    # tokens: 1..vocab//2-1 keys, vocab//2..vocab-1 values, vocab..vocab+noise_vocab-1 noise (0 unused)
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.vocab, vocab_size=c.vocab + c.noise_vocab, dependency=c.seq_len())

    def _noise(self, g, shape, device) -> torch.Tensor:
        c = self.cfg
        return torch.randint(c.vocab, c.vocab + c.noise_vocab, shape, generator=g, device=device)

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        B, n, slots = batch_size, c.n_pairs, c.n_pairs + c.n_noise()
        region = length - 2 * slots  # the query region at this (possibly longer) length
        if region < n:
            raise ValueError(f"noisy_recall: length {length} is too short for {slots} context pairs and {n} queries")
        keys = torch.rand(B, c.vocab // 2 - 1, generator=g, device=device).argsort(-1)[:, :n] + 1
        values = torch.randint(c.vocab // 2, c.vocab, (B, n), generator=g, device=device)
        pairs = torch.stack([keys, values], -1)  # (B, n, 2)
        context = torch.cat([pairs, self._noise(g, (B, slots - n, 2), device)], 1)  # (B, slots, 2)
        shuffle = torch.rand(B, slots, generator=g, device=device).argsort(-1)
        context = context.gather(1, shuffle[..., None].expand(-1, -1, 2)).flatten(1)  # (B, 2 * slots)
        x = torch.cat([context, self._noise(g, (B, region), device)], 1)
        qpos = torch.rand(B, region, generator=g, device=device).argsort(-1)[:, :n] + 2 * slots
        order = torch.rand(B, n, generator=g, device=device).argsort(-1)  # which key goes where
        x.scatter_(1, qpos, keys.gather(1, order))
        y = torch.full_like(x, IGNORE)
        y.scatter_(1, qpos, values.gather(1, order))
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        n_values = self.cfg.vocab - self.cfg.vocab // 2
        return {"loss": math.log(n_values), "acc": 1.0 / n_values}
