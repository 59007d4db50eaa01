"""Transformer encoder-decoder (Vaswani et al. 2017) with cross-attention.

The encoder is bidirectional over the source (key-padding masked), the decoder is causal
over the target and cross-attends to the encoder output. Both are ``TransformerStack``s
from ``models.blocks``, so ``norm_position`` (post/pre/rezero/none), ``norm`` and the
positional encodings mean exactly what they mean for the ``transformer`` backbone.
``source_pos_encoding`` sets the encoder's own: ``none`` makes the encoder see the source
as a bag of tokens (self-attention without positions is permutation-equivariant, so the
memory the decoder attends to is a set; Vaswani et al. 2017 Sec. 3.5) while the decoder
keeps ``pos_encoding``. ``rope`` and ``alibi`` (``models/configs/blocks.py``) are refused here: they
would need a rule for cross-attention, where queries and keys come from different sequences.
Incremental decoding re-runs the decoder over the prefix at each step (no key/value
cache): quadratic in the output length, simple, and exact.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.models.configs.base import input_width
from seqbench.models.configs.blocks import TransformerFields, transformer_layer_macs
from seqbench.models.configs.decoding import DecodeConfig
from seqbench.models.configs.seq2seq import SEQ2SEQ_ONLY


@MODELS.config("transformer_seq2seq")
class TransformerSeq2SeqConfig(TransformerFields):
    """Transformer encoder-decoder with cross-attention; post/pre/rezero norms; greedy and beam decoding."""

    name: Literal["transformer_seq2seq"] = "transformer_seq2seq"
    supported_kinds = SEQ2SEQ_ONLY

    pos_encoding: Literal["sinusoidal", "learned", "none"] = Field(
        "sinusoidal",
        description="the decoder's position signal (rope, alibi: model=transformer or stack only); "
        "sinusoidal extends to lengths longer than training",
    )
    source_pos_encoding: Literal["sinusoidal", "learned", "none"] | None = Field(
        None, description="the encoder's position signal; null = pos_encoding; none = the source as a bag of tokens"
    )
    decode: DecodeConfig = Field(default_factory=DecodeConfig, description="greedy/beam decoding at evaluation")

    @field_validator("pos_encoding", "source_pos_encoding", mode="before")
    @classmethod
    def _no_relative_positions(cls, kind: object) -> object:
        if kind in ("rope", "alibi"):
            raise ValueError(
                f"{kind} acts inside self-attention and is not implemented for transformer_seq2seq "
                "(its cross-attention has no rule for it); choose sinusoidal, learned or none, "
                "or use model=transformer"
            )
        return kind

    def source_positions(self) -> str:
        """The encoder's position signal (``source_pos_encoding``, else ``pos_encoding``)."""
        return self.source_pos_encoding or self.pos_encoding

    def max_positions(self) -> int | None:
        return self.max_len if "learned" in (self.pos_encoding, self.source_positions()) else None

    def forward_macs(self, spec: TaskSpec, T: int, target_len: int | None) -> int | None:
        """Teacher-forced pass: encoder over the T source positions, decoder over ``target_len``."""
        if target_len is None:
            return None
        d, d_ff, L, S, T = self.d_model, self.ff_width(), self.n_layers, T, target_len
        src, tgt = input_width(self, spec.vocab_size, None), input_width(self, spec.n_classes, None)
        proj = (S * src * d if src != d else 0) + (T * tgt * d if tgt != d else 0)
        encoder = L * transformer_layer_macs(d, d_ff, S, S)
        cross = T * 2 * d * d + S * 2 * d * d + 2 * T * S * d  # q and out on targets, k and v on the memory
        decoder = L * (transformer_layer_macs(d, d_ff, T, T) + cross)
        return proj + encoder + decoder + T * d * spec.n_classes
