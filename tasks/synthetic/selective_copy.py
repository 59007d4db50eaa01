"""Selective copying (Gu & Dao 2023, the Mamba paper).

Worked example (length=8, n_symbols=3; blank=_, marker=?)::

    input : _ a _ _ b _ c _ ? ? ?
    target: . . . . . . . . a b c      (. = not scored)

``n_symbols`` symbols sit at random positions among ``length`` blanks; after them come
``n_symbols`` markers, at which the model must emit the symbols in order. Unlike
``copy``, the spacing varies per sequence, so a fixed-delay filter cannot solve it.
Loss and accuracy are over the answer positions only.

Memoryless baseline: a uniform guess, cross-entropy ``ln(alphabet)`` and accuracy
``1 / alphabet``. Solved: ``val/acc >= 0.95``.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTaskConfig, positive_int


@TASKS.config("selective_copy")
class SelectiveCopyConfig(TokenTaskConfig):
    """Selective copying: find symbols scattered among blanks and output them in order."""

    name: Literal["selective_copy"] = "selective_copy"

    length: int = positive_int("positions the symbols are scattered over", 64)
    n_symbols: int = positive_int("symbols to find and reproduce in order", 8)
    alphabet: int = Field(8, ge=2, description="distinct symbols")

    @model_validator(mode="after")
    def _fits(self):
        if self.n_symbols > self.length:
            raise ValueError(f"task.n_symbols: {self.n_symbols} symbols do not fit in task.length={self.length}; "
                             "lower n_symbols or raise length")
        return self

    def seq_len(self) -> int:
        return self.length + self.n_symbols


# -- torch below: the modules. Everything above imports without torch (bench/core/configs_only.py).
import math

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask


@TASKS.module("selective_copy")
class SelectiveCopyTask(SyntheticTask, TokenTask):
    # tokens: 0 = blank, 1..alphabet = symbols, alphabet+1 = marker
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.alphabet + 1, vocab_size=c.alphabet + 2, dependency=c.seq_len())

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        n = c.n_symbols
        span = length - n  # scatter region at this (possibly longer) evaluation length
        if span < n:
            raise ValueError(f"selective_copy: length {length} is too short for {n} symbols")
        pos = torch.rand(batch_size, span, generator=g, device=device).argsort(-1)[:, :n]
        pos = pos.sort(-1).values  # (B, n) increasing positions
        symbols = torch.randint(1, c.alphabet + 1, (batch_size, n), generator=g, device=device)
        x = torch.zeros(batch_size, length, dtype=torch.long, device=device)
        x.scatter_(1, pos, symbols)
        x[:, span:] = c.alphabet + 1
        y = torch.full_like(x, IGNORE)
        y[:, span:] = symbols
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        return {"loss": math.log(self.cfg.alphabet), "acc": 1.0 / self.cfg.alphabet}
