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

What the decoder finds, under the model (the model's ``score``: summed log-probability of the
decoded tokens up to and including the first <eos>, teacher forced on them):

- ``logprob``: mean over sequences of log p(decoded output | source), in nats;
- ``beam_logprob_gain``: mean over sequences of log p(decoded) - log p(greedy decoded), the
  same model decoded both ways on the same batch (0 when the model decodes greedily);
- ``beam_share_better``: share of sequences whose decoded output is more likely than the greedy
  one by more than ``BEAM_GAIN_TOL`` nats (a strict improvement; beam search can also lose the
  greedy path, so a gain of the mean alone would hide that);
- ``beam_em_gain``: exact match of the decoded output minus that of the greedy one (in [-1, 1]).

The greedy pass runs only when ``model.decode.beam_width`` > 1.
"""

from __future__ import annotations

from pydantic import Field

from seqbench.bench.core.contract import Goal, MetricDef, OutputKind, TaskFacts
from seqbench.tasks.configs.base import TaskConfig, positive_int

PAD, SOS, EOS, FIRST_SYMBOL = 0, 1, 2, 3
SOLVED_EXACT_MATCH = 0.9
BEAM_GAIN_TOL = 1e-4  # nats: a decoded output more likely than greedy's by less is a tie (float rounding)


class Seq2SeqTaskConfig(TaskConfig):
    # not causal: the whole source is read before the first output
    facts = TaskFacts(
        OutputKind.SEQ2SEQ,
        causal=False,
        primary="exact_match",
        metrics=(
            MetricDef("token_acc", Goal.MAX),
            MetricDef("exact_match", Goal.MAX),
            MetricDef("bleu", Goal.MAX),
            MetricDef("logprob", Goal.MAX),
            MetricDef("beam_logprob_gain", Goal.MAX),
            MetricDef("beam_share_better", Goal.MAX),
            MetricDef("beam_em_gain", Goal.MAX),
        ),
    )

    length: int = positive_int("source symbols; the target has length + 1 tokens (with <eos>)", 16)
    vocab: int = Field(16, ge=2, description="distinct symbols (ids 3..vocab+2; 0 <pad>, 1 <sos>, 2 <eos>)")

    def seq_len(self) -> int:
        return self.length

    def target_len(self) -> int:
        return self.length + 1  # the target, then <eos>
