"""Copy memory (Hochreiter & Schmidhuber 1997; Arjovsky, Shah & Bengio 2016).

Worked example (n_symbols=3, alphabet=4, delay=4; blank=_, delimiter=:)::

    input : a b c _ _ _ : _ _ _
    target: _ _ _ _ _ _ _ a b c

The model reads ``n_symbols`` random symbols, waits ``delay - 1`` blanks, sees the
delimiter, and must reproduce the symbols in order during the last ``n_symbols`` steps.
Total length is ``delay + 2 * n_symbols``; the loss is cross-entropy over every step
(as in Arjovsky et al.), accuracy is over the recalled symbols only.

Memoryless baseline: predict blank everywhere except the last ``n_symbols`` steps and
a uniform guess there, cross-entropy ``n_symbols * ln(alphabet) / (delay + 2 n_symbols)``
and recall accuracy ``1 / alphabet``. Solved: ``val/acc >= 0.95``.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTaskConfig, positive_int


@TASKS.config("copy")
class CopyConfig(TokenTaskConfig):
    """Copy memory: remember n_symbols symbols across a delay, then reproduce them."""

    name: Literal["copy"] = "copy"

    n_symbols: int = positive_int("symbols to remember (10 in Arjovsky et al.)", 10)
    alphabet: int = Field(8, ge=2, description="distinct symbols; uniform guess accuracy is 1/alphabet")
    delay: int = positive_int("steps between the last symbol and the first recall (blanks + delimiter)", 50)

    def seq_len(self) -> int:
        return self.delay + 2 * self.n_symbols


# -- torch below: the modules. Everything above imports without torch (bench/core/configs_only.py).
import math

import torch

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask


@TASKS.module("copy")
class CopyTask(SyntheticTask, TokenTask):
    # tokens: 0 = blank, 1..alphabet = symbols, alphabet+1 = delimiter
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.alphabet + 1, vocab_size=c.alphabet + 2,
                               dependency=c.delay + c.n_symbols)

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        n = c.n_symbols
        delay = length - 2 * n  # evaluating at another length stretches the delay
        if delay < 1:
            raise ValueError(f"copy: length {length} leaves no delay for n_symbols={n}")
        symbols = torch.randint(1, c.alphabet + 1, (batch_size, n), generator=g, device=device)
        x = torch.zeros(batch_size, length, dtype=torch.long, device=device)
        x[:, :n] = symbols
        x[:, n + delay - 1] = c.alphabet + 1  # delimiter
        y = torch.zeros_like(x)
        y[:, -n:] = symbols
        score = torch.zeros_like(x, dtype=torch.bool)
        score[:, -n:] = True
        return Batch(x=x, y=y, score_mask=score)

    def baseline(self) -> dict[str, float]:
        c = self.cfg
        return {"loss": c.n_symbols * math.log(c.alphabet) / c.seq_len(), "acc": 1.0 / c.alphabet}
