"""RNN encoder-decoder (Sutskever et al. 2014) with optional attention.

``attention``:

- ``none``: the decoder starts from the encoder's final state and sees nothing else,
  the fixed-size bottleneck that fails as sources grow longer;
- ``bahdanau``: additive attention (Bahdanau et al. 2015) with the previous decoder state
  as the query; its context is fed into the decoder RNN, so decoding is sequential;
- ``dot``: scaled dot-product attention on the current decoder output (Luong et al.
  2015, "global" attention without input feeding), parallel under teacher forcing.

With attention the readout is Luong's attentional state ``tanh(W [h_t; c_t])``.
``teacher_forcing`` < 1 feeds the model's own argmax back in place of the true previous
token (scheduled sampling, Bengio et al. 2015), per token, in training only; with
``teacher_forcing_end`` it decays linearly to that ratio over
``teacher_forcing_decay_steps`` training batches (counted by the model itself).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.contract import OutputKind, TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.models.configs.base import Dropout, Layers, ModelConfig, input_width
from seqbench.models.configs.decoding import DecodeConfig
from seqbench.models.configs.recurrent import GATES, rnn_stack_macs

SEQ2SEQ_ONLY = frozenset({OutputKind.SEQ2SEQ})


@MODELS.config("seq2seq")
class Seq2SeqConfig(ModelConfig):
    """RNN encoder-decoder (lstm/gru) with none/bahdanau/dot attention, greedy and beam decoding."""

    name: Literal["seq2seq"] = "seq2seq"
    supported_kinds = SEQ2SEQ_ONLY

    n_layers: Layers = 1
    dropout: Dropout = 0.0
    cell: Literal["lstm", "gru"] = Field("lstm", description="recurrent cell of encoder and decoder")
    attention: Literal["none", "bahdanau", "dot"] = Field(
        "dot", description="none = final encoder state only (the bottleneck); bahdanau = additive; dot = scaled dot"
    )
    teacher_forcing: float = Field(
        1.0, ge=0.0, le=1.0, description="probability of feeding the true previous token in training"
    )
    teacher_forcing_end: float | None = Field(
        None, ge=0.0, le=1.0, description="ratio reached after the decay; null = constant ratio"
    )
    teacher_forcing_decay_steps: int = Field(1000, ge=1, description="training batches of the linear decay")
    decode: DecodeConfig = Field(default_factory=DecodeConfig, description="greedy/beam decoding at evaluation")

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int | None:
        """Teacher-forced pass: encoder over the T source positions, decoder over ``target_len``
        (scheduled sampling changes which tokens go in, not the work)."""
        if target_len is None:
            return None
        H, g, S, T = self.d_model, GATES[self.cell], T, target_len
        src = input_width(self, spec.vocab_size, None)
        tgt = input_width(self, spec.n_classes, None) + (H if self.attention == "bahdanau" else 0)  # context fed in
        total = S * rnn_stack_macs(src, H, self.n_layers, g) + T * rnn_stack_macs(tgt, H, self.n_layers, g)
        if self.attention == "dot":
            total += T * (2 * S * H)  # scores and weighted sum
        elif self.attention == "bahdanau":
            total += S * H * H + T * (H * H + S * H + S * H)  # keys once; query, v . tanh(q + k), weighted sum
        if self.attention != "none":
            total += T * 2 * H * H  # the attentional state tanh(W [h; c])
        return total + T * H * spec.n_classes
