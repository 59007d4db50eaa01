"""Sequence reversal, a synthetic sequence-to-sequence task.

Worked example (length=4; ids shown as letters)::

    source : a b c d
    target : d c b a <eos>          decoder input: <sos> d c b a

The first output depends on the last input and the last output on the first, so an
encoder-decoder without attention must squeeze the whole source through its final state
(the bottleneck), while attention can align each output with its mirrored input.
Metrics on decoded output (see ``tasks.synthetic.seq2seq``): token_acc, exact_match, bleu.

Memoryless baseline (a decoder that never sees the source): a uniform guess among
``vocab`` symbols at each of the ``length`` positions and a certain <eos>, so
cross-entropy ``length * ln(vocab) / (length + 1)``, token accuracy
``(length / vocab + 1) / (length + 1)`` and exact match ``vocab ** -length``.
Solved: ``val/exact_match >= 0.9``.
"""
from __future__ import annotations

from typing import Literal

from seqbench.bench.core.registry import TASKS
from seqbench.tasks.synthetic.seq2seq import Seq2SeqTaskConfig


@TASKS.config("reverse")
class ReverseConfig(Seq2SeqTaskConfig):
    """Reverse: output the source symbols in reverse order, then <eos>."""

    name: Literal["reverse"] = "reverse"


# -- torch below: the modules. Everything above imports without torch (bench/core/configs_only.py).
import math

from seqbench.tasks.synthetic.seq2seq import Seq2SeqTask


@TASKS.module("reverse")
class ReverseTask(Seq2SeqTask):
    def target(self, src):
        return src.flip(1)  # (B, T)

    def baseline(self) -> dict[str, float]:
        T, V = self.cfg.length, self.cfg.vocab
        return {"loss": T * math.log(V) / (T + 1), "token_acc": (T / V + 1) / (T + 1),
                "exact_match": float(V) ** -T}
