"""Shared layout and metrics of the synthetic sequence-to-sequence tasks (reverse, sort).

Token ids: 0 = <pad>, 1 = <sos>, 2 = <eos>, symbols 3 .. vocab+2. A batch is::

    x              source symbols                      (B, T)
    y              target symbols then <eos>           (B, T+1)
    aux["y_in"]    <sos> then the target symbols       (B, T+1)   decoder input (teacher forcing)

Metrics are measured on *decoded* outputs (the model's ``generate``: greedy or beam, as
``model.decode`` says), never teacher-forced: ``token_acc`` (position-wise, <eos>
included), ``exact_match`` (whole output incl. <eos>), and ``bleu`` (corpus BLEU from
``sacrebleu`` on the symbol ids, <eos> stripped). The loss stays teacher-forced
cross-entropy. Solved: ``val/exact_match >= 0.9``.
"""

from __future__ import annotations

from pydantic import Field

from seqbench.bench.core.contract import Goal, MetricDef, OutputKind, TaskFacts
from seqbench.tasks.configs.base import TaskConfig, positive_int

PAD, SOS, EOS, FIRST_SYMBOL = 0, 1, 2, 3
SOLVED_EXACT_MATCH = 0.9


class Seq2SeqTaskConfig(TaskConfig):
    # not causal: the whole source is read before the first output
    facts = TaskFacts(
        OutputKind.SEQ2SEQ,
        causal=False,
        primary="exact_match",
        metrics=(MetricDef("token_acc", Goal.MAX), MetricDef("exact_match", Goal.MAX), MetricDef("bleu", Goal.MAX)),
    )

    length: int = positive_int("source symbols; the target has length + 1 tokens (with <eos>)", 16)
    vocab: int = Field(16, ge=2, description="distinct symbols (ids 3..vocab+2; 0 <pad>, 1 <sos>, 2 <eos>)")

    def seq_len(self) -> int:
        return self.length

    def target_len(self) -> int:
        return self.length + 1  # the target, then <eos>
