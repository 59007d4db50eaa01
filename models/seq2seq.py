"""RNN encoder-decoder with none / Bahdanau / dot attention.

The config (no torch) is in ``models/configs/seq2seq.py``, where the family is documented."""

from __future__ import annotations

import dataclasses
import math

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqbench.bench.core.contract import Batch
from seqbench.bench.core.registry import MODELS
from seqbench.models.base import InputEncoder
from seqbench.models.blocks import valid_mask
from seqbench.models.configs.seq2seq import SEQ2SEQ_ONLY, Seq2SeqConfig  # noqa: F401  (the configs, re-exported beside their modules)
from seqbench.models.decoding import EncoderDecoder, State


@MODELS.module("seq2seq")
class RNNSeq2Seq(EncoderDecoder):
    cfg: Seq2SeqConfig
    train_batches: torch.Tensor  # a buffer (register_buffer), declared for the type checker

    def __init__(self, cfg: Seq2SeqConfig, spec):
        super().__init__(cfg, spec)
        H, L = cfg.d_model, cfg.n_layers
        rnn = nn.LSTM if cfg.cell == "lstm" else nn.GRU
        self.src_embed = InputEncoder(cfg, spec)
        self.tgt_embed = InputEncoder(cfg, dataclasses.replace(spec, vocab_size=spec.n_classes))
        between = cfg.dropout if L > 1 else 0.0
        self.encoder = rnn(self.src_embed.d_out, H, num_layers=L, batch_first=True, dropout=between)
        feed = H if cfg.attention == "bahdanau" else 0  # Bahdanau feeds the context into the RNN
        self.decoder = rnn(self.tgt_embed.d_out + feed, H, num_layers=L, batch_first=True, dropout=between)
        if cfg.attention == "bahdanau":
            self.att_q = nn.Linear(H, H, bias=False)
            self.att_k = nn.Linear(H, H)
            self.att_v = nn.Linear(H, 1, bias=False)
        self.combine = nn.Linear(2 * H, H) if cfg.attention != "none" else None
        self.drop = nn.Dropout(cfg.dropout)
        self.out = nn.Linear(H, self.vocab)
        self.register_buffer("train_batches", torch.zeros((), dtype=torch.long))

    # -- pieces ------------------------------------------------------------------------------
    def _hx(self, state: State):
        h = state["h"].transpose(0, 1).contiguous()  # (L, N, H)
        return (h, state["c"].transpose(0, 1).contiguous()) if "c" in state else h

    def _store(self, state: State, hx) -> State:
        h, c = hx if isinstance(hx, tuple) else (hx, None)
        state = {**state, "h": h.transpose(0, 1)}  # (N, L, H)
        if c is not None:
            state["c"] = c.transpose(0, 1)
        return state

    def attend(self, q: torch.Tensor, state: State) -> torch.Tensor:
        """Context vectors (N, T, H) for queries q (N, T, H) over the encoder memory."""
        mem = state["mem"]  # (N, S, H)
        if self.cfg.attention == "dot":
            scores = q @ mem.transpose(1, 2) / math.sqrt(mem.shape[-1])  # (N, T, S)
        else:
            e = torch.tanh(self.att_q(q)[:, :, None] + state["mem_key"][:, None])  # (N, T, S, H)
            scores = self.att_v(e).squeeze(-1)  # (N, T, S)
        if "valid" in state:
            scores = scores.masked_fill(~state["valid"][:, None], float("-inf"))
        return scores.softmax(-1) @ mem  # (N, T, H)

    def readout(self, o: torch.Tensor, ctx: torch.Tensor | None) -> torch.Tensor:
        if ctx is not None:
            assert self.combine is not None  # an attention model has its combine layer
            o = torch.tanh(self.combine(torch.cat([o, ctx], -1)))  # (N, T, H) attentional state
        return self.out(self.drop(o))  # (N, T, V)

    # -- EncoderDecoder API ---------------------------------------------------------------------
    def encode(self, batch: Batch) -> State:
        x = self.drop(self.src_embed(batch.x))  # (B, S, d)
        if batch.lengths is not None:
            packed = pack_padded_sequence(x, batch.lengths.cpu(), batch_first=True, enforce_sorted=False)
            mem, hx = self.encoder(packed)
            mem, _ = pad_packed_sequence(mem, batch_first=True, total_length=x.shape[1])  # (B, S, H)
        else:
            mem, hx = self.encoder(x)  # (B, S, H)
        state = self._store({}, hx)
        if self.cfg.attention != "none":
            state["mem"] = mem
            if self.cfg.attention == "bahdanau":
                state["mem_key"] = self.att_k(mem)  # keys once per source, not per step
            valid = valid_mask(batch.lengths, x.shape[1], x.device)
            if valid is not None:
                state["valid"] = valid
        return state

    def step(self, tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        e = self.drop(self.tgt_embed(tokens[:, None]))  # (N, 1, d)
        ctx = None
        if self.cfg.attention == "bahdanau":
            ctx = self.attend(state["h"][:, -1:], state)  # query: top layer's previous state (N, 1, H)
            e = torch.cat([e, ctx], -1)
        o, hx = self.decoder(e, self._hx(state))  # (N, 1, H)
        if self.cfg.attention == "dot":
            ctx = self.attend(o, state)
        return self.readout(o, ctx)[:, 0], self._store(state, hx)  # (N, V)

    def teacher_forcing_ratio(self) -> float:
        c = self.cfg
        if c.teacher_forcing_end is None:
            return c.teacher_forcing
        frac = min(1.0, float(self.train_batches) / c.teacher_forcing_decay_steps)
        return c.teacher_forcing + frac * (c.teacher_forcing_end - c.teacher_forcing)

    def forward(self, batch: Batch, state=None):
        y_in = batch.aux["y_in"]  # (B, T_out)
        ratio = self.teacher_forcing_ratio() if self.training else 1.0
        if self.training:
            self.train_batches += 1
        dec = self.encode(batch)
        if ratio >= 1.0 and self.cfg.attention != "bahdanau":  # whole target in one fused RNN call
            o, _ = self.decoder(self.drop(self.tgt_embed(y_in)), self._hx(dec))  # (B, T_out, H)
            ctx = self.attend(o, dec) if self.cfg.attention == "dot" else None
            return self.readout(o, ctx), None
        logits: list[torch.Tensor] = []
        tok = y_in[:, 0]
        for t in range(y_in.shape[1]):
            if t > 0 and ratio < 1.0:
                own = logits[-1].argmax(-1)  # (B,)
                truth = torch.rand(own.shape, device=own.device) < ratio
                tok = torch.where(truth, y_in[:, t], own)
            elif t > 0:
                tok = y_in[:, t]
            step_logits, dec = self.step(tok, dec)
            logits.append(step_logits)
        return torch.stack(logits, 1), None  # (B, T_out, V)
