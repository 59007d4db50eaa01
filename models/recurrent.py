"""Recurrent backbones: tanh RNN, IRNN, LSTM, GRU (stacked, optionally bidirectional).

The config (no torch) is in ``models/configs/recurrent.py``, where the family is documented."""

from __future__ import annotations

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqbench.bench.core.registry import MODELS
from seqbench.models.base import Backbone, detach_state
from seqbench.models.configs.recurrent import (  # noqa: F401  (the configs, re-exported beside their modules)
    GATES,
    GRUConfig,
    IRNNConfig,
    LSTMConfig,
    OrthogonalInitConfig,
    RecurrentConfig,
    RNNConfig,
    rnn_stack_macs,
)


class RecurrentBackbone(Backbone):
    """Shared body: one fused multi-layer nn.RNN/LSTM/GRU plus output dropout."""

    cfg: RecurrentConfig
    rnn_cls: type[nn.RNN] | type[nn.LSTM] | type[nn.GRU]
    rnn_kwargs: dict = {}

    def __init__(self, cfg: RecurrentConfig, spec, d_in: int):
        super().__init__(cfg, spec, d_in)
        self.rnn = self.rnn_cls(
            d_in,
            cfg.d_model,
            num_layers=cfg.n_layers,
            batch_first=True,
            dropout=cfg.dropout if cfg.n_layers > 1 else 0.0,
            bidirectional=cfg.bidirectional,
            **self.rnn_kwargs,
        )
        self.drop = nn.Dropout(cfg.dropout)
        self.d_out = cfg.d_model * (2 if cfg.bidirectional else 1)
        self.reset_recurrent()

    def reset_recurrent(self) -> None:
        """Architecture-specific initialisation (default: PyTorch's)."""
        self.orthogonal_hh()

    def orthogonal_hh(self) -> None:
        """``recurrent_init: orthogonal``: each gate's (d, d) block of every W_hh orthogonal."""
        if getattr(self.cfg, "recurrent_init", "default") != "orthogonal":
            return
        d = self.cfg.d_model
        for name, p in self.rnn.named_parameters():
            if name.startswith("weight_hh"):  # (gates * d, d): gate blocks stacked on rows
                for block in p.data.split(d, dim=0):
                    nn.init.orthogonal_(block)

    def forward(self, x, lengths=None, state=None):
        k = self.cfg.tbptt
        if k is None or x.shape[1] <= k:
            return self.run(x, lengths, state)
        outs = []
        for start in range(0, x.shape[1], k):  # truncated BPTT: same values, gradient cut between chunks
            part = None if lengths is None else (lengths - start).clamp(0, k)
            h, state = self.run_rows(x[:, start : start + k], part, detach_state(state) if start else state)
            outs.append(h)
        return torch.cat(outs, dim=1), state  # (B, T, d_out)

    def run_rows(self, x, lengths, state):
        """``run`` over the rows whose sequence reaches this chunk (``lengths > 0``); the others keep
        their state and give zero features, as padding does in ``run``."""
        if lengths is None or bool((lengths > 0).all()):
            return self.run(x, lengths, state)
        live = (lengths > 0).nonzero().squeeze(1)
        out = x.new_zeros(x.shape[0], x.shape[1], self.d_out)  # (B, k, d_out)
        if len(live) == 0:
            return out, state
        part = None if state is None else _rows(state, live)
        h, part = self.run(x[live], lengths[live], part)
        out[live] = h
        return out, _put_rows(state, live, part, x.shape[0])

    def run(self, x, lengths=None, state=None):
        if lengths is not None:
            T = x.shape[1]
            packed = pack_padded_sequence(x, lengths.cpu(), batch_first=True, enforce_sorted=False)
            out, state = self.rnn(packed, state)
            h, _ = pad_packed_sequence(out, batch_first=True, total_length=T)  # (B, T, d_out)
        else:
            h, state = self.rnn(x, state)  # (B, T, d_out)
        return self.drop(h), state

    def pool_last(self, h, lengths):
        if not self.cfg.bidirectional:
            return super().pool_last(h, lengths)
        d = self.cfg.d_model
        fwd = super().pool_last(h[..., :d], lengths)  # left-to-right state after the last token
        return torch.cat([fwd, h[:, 0, d:]], dim=-1)  # right-to-left state after the first token


def _rows(state, rows):
    """Batch rows of a state; the batch is dim 1 of (layers * directions, B, d)."""
    return tuple(s[:, rows] for s in state) if isinstance(state, tuple) else state[:, rows]


def _put_rows(state, rows, part, batch):
    """``state`` with ``rows`` replaced by ``part`` (zeros first where ``state`` is None)."""
    if isinstance(part, tuple):
        base = state if state is not None else tuple(p.new_zeros(p.shape[0], batch, p.shape[2]) for p in part)
        return tuple(_put_rows(b, rows, p, batch) for b, p in zip(base, part, strict=True))
    full = part.new_zeros(part.shape[0], batch, part.shape[2]) if state is None else state.clone()
    full[:, rows] = part
    return full


@MODELS.module("rnn")
class RNN(RecurrentBackbone):
    rnn_cls = nn.RNN
    rnn_kwargs = {"nonlinearity": "tanh"}


@MODELS.module("irnn")
class IRNN(RecurrentBackbone):
    cfg: IRNNConfig
    rnn_cls = nn.RNN
    rnn_kwargs = {"nonlinearity": "relu"}

    def reset_recurrent(self) -> None:
        for name, p in self.rnn.named_parameters():
            if name.startswith("weight_hh"):
                with torch.no_grad():
                    p.copy_(torch.eye(p.shape[0]) * self.cfg.recurrent_init_scale)
            elif name.startswith("bias"):
                nn.init.zeros_(p)


@MODELS.module("lstm")
class LSTM(RecurrentBackbone):
    cfg: LSTMConfig
    rnn_cls = nn.LSTM

    def reset_recurrent(self) -> None:
        self.orthogonal_hh()
        H = self.cfg.d_model
        for name, p in self.rnn.named_parameters():
            if name.startswith("bias"):  # gate order i, f, g, o; b_ih and b_hh are summed
                with torch.no_grad():
                    p[H : 2 * H] = self.cfg.forget_bias if name.startswith("bias_ih") else 0.0


@MODELS.module("gru")
class GRU(RecurrentBackbone):
    rnn_cls = nn.GRU
