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
from seqbench.tasks.synthetic.configs.seq2seq import Seq2SeqTaskConfig


@TASKS.config("reverse")
class ReverseConfig(Seq2SeqTaskConfig):
    """Reverse: output the source symbols in reverse order, then <eos>."""

    name: Literal["reverse"] = "reverse"
