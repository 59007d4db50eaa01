"""Transformer encoder-decoder with cross-attention.

The config (no torch) is in ``models/configs/transformer_seq2seq.py``, where the family is documented."""

from __future__ import annotations

import dataclasses

import torch
from torch import nn

from seqbench.bench.core.contract import Batch
from seqbench.bench.core.registry import MODELS
from seqbench.models.base import InputEncoder
from seqbench.models.blocks import PositionalEncoding, TransformerStack, valid_mask
from seqbench.models.configs.transformer_seq2seq import (  # the configs, re-exported beside their modules
    TransformerSeq2SeqConfig,
)
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
        # the encoder's: the same module (a learned table shared) unless source_pos_encoding sets its own
        own = cfg.source_pos_encoding is not None
        self.src_pos = PositionalEncoding(cfg.source_positions(), d, cfg.max_len) if own else self.pos
        self.drop = nn.Dropout(cfg.dropout)
        self.encoder = TransformerStack(cfg)
        self.decoder = TransformerStack(cfg, cross=True)
        self.out = nn.Linear(d, self.vocab)

    def encode(self, batch: Batch) -> State:
        x = self.drop(self.src_pos(self.src_proj(self.src_embed(batch.x))))  # (B, S, d)
        valid = valid_mask(batch.lengths, x.shape[1], x.device)
        state = {
            "mem": self.encoder(x, valid=valid),
            "prefix": torch.zeros(x.shape[0], 0, dtype=torch.long, device=x.device),
        }
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
