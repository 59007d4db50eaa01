"""Transformer encoder-decoder (Vaswani et al. 2017) with cross-attention.

The encoder is bidirectional over the source (key-padding masked), the decoder is causal
over the target and cross-attends to the encoder output. Both are ``TransformerStack``s
from ``models.blocks``, so ``norm_position`` (post/pre/rezero/none), ``norm`` and the
positional encodings mean exactly what they mean for the ``transformer`` backbone.
Incremental decoding re-runs the decoder over the prefix at each step (no key/value
cache): quadratic in the output length, simple, and exact.
"""
from __future__ import annotations

import dataclasses
from typing import Literal

from pydantic import Field

from seqbench.bench.core.contract import TaskSpec
from seqbench.bench.core.registry import MODELS
from seqbench.models.base import input_width
from seqbench.models.blocks import TransformerFields, transformer_layer_macs
from seqbench.models.decoding import DecodeConfig
from seqbench.models.seq2seq import SEQ2SEQ_ONLY


@MODELS.config("transformer_seq2seq")
class TransformerSeq2SeqConfig(TransformerFields):
    """Transformer encoder-decoder with cross-attention; post/pre/rezero norms; greedy and beam decoding."""

    name: Literal["transformer_seq2seq"] = "transformer_seq2seq"
    supported_kinds = SEQ2SEQ_ONLY

    decode: DecodeConfig = Field(default_factory=DecodeConfig, description="greedy/beam decoding at evaluation")

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


# -- torch below: the modules. Everything above imports without torch (bench/core/configs_only.py).
import torch
from torch import nn

from seqbench.bench.core.contract import Batch
from seqbench.models.base import InputEncoder
from seqbench.models.blocks import PositionalEncoding, TransformerStack, valid_mask
from seqbench.models.decoding import EncoderDecoder, State


@MODELS.module("transformer_seq2seq")
class TransformerSeq2Seq(EncoderDecoder):
    def __init__(self, cfg: TransformerSeq2SeqConfig, spec):
        super().__init__(cfg, spec)
        d = cfg.d_model
        self.src_embed = InputEncoder(cfg, spec)
        self.tgt_embed = InputEncoder(cfg, dataclasses.replace(spec, vocab_size=spec.n_classes))
        self.src_proj = nn.Identity() if self.src_embed.d_out == d else nn.Linear(self.src_embed.d_out, d)
        self.tgt_proj = nn.Identity() if self.tgt_embed.d_out == d else nn.Linear(self.tgt_embed.d_out, d)
        self.pos = PositionalEncoding(cfg.pos_encoding, d, cfg.max_len)
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = TransformerStack(cfg)
        self.decoder = TransformerStack(cfg, cross=True)
        self.out = nn.Linear(d, self.vocab)

    def encode(self, batch: Batch) -> State:
        x = self.drop(self.pos(self.src_proj(self.src_embed(batch.x))))  # (B, S, d)
        valid = valid_mask(batch.lengths, x.shape[1], x.device)
        state = {"mem": self.encoder(x, valid=valid),
                 "prefix": torch.zeros(x.shape[0], 0, dtype=torch.long, device=x.device)}
        if valid is not None:
            state["valid"] = valid
        return state

    def decode(self, y_in: torch.Tensor, state: State) -> torch.Tensor:
        h = self.drop(self.pos(self.tgt_proj(self.tgt_embed(y_in))))  # (B, T, d)
        h = self.decoder(h, causal=True, memory=state["mem"], memory_valid=state.get("valid"))
        return self.out(h)  # (B, T, V)

    def step(self, tokens, state):
        prefix = torch.cat([state["prefix"], tokens[:, None]], 1)  # (N, t+1)
        return self.decode(prefix, state)[:, -1], {**state, "prefix": prefix}

    def forward(self, batch: Batch, state=None):
        return self.decode(batch.aux["y_in"], self.encode(batch)), None
