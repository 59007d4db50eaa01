"""Greedy and beam decoding for the encoder-decoders.

The config (no torch) is in ``models/configs/decoding.py``, where the family is documented."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from seqbench.bench.core.contract import Batch, TaskSpec
from seqbench.models.configs.decoding import DecodeConfig  # noqa: F401  (the configs, re-exported beside their modules)

State = dict[str, torch.Tensor]


class EncoderDecoder(nn.Module):
    """Base class of registered encoder-decoders: generation and scoring on top of ``step``."""

    def __init__(self, cfg: Any, spec: TaskSpec):
        super().__init__()
        if spec.sos_id is None or spec.eos_id is None:
            raise ValueError(
                f"model.name: {cfg.name!r} needs a task that defines <sos> and <eos> "
                "(TaskSpec.sos_id/eos_id); use a seq2seq task such as reverse or sort"
            )
        self.cfg, self.spec = cfg, spec
        self.sos, self.eos = spec.sos_id, spec.eos_id
        self.pad = spec.pad_id if spec.pad_id is not None else spec.eos_id
        self.vocab = spec.n_classes

    # -- subclass API -------------------------------------------------------------------
    def encode(self, batch: Batch) -> State:
        raise NotImplementedError

    def step(self, tokens: torch.Tensor, state: State) -> tuple[torch.Tensor, State]:
        raise NotImplementedError

    # -- shared -------------------------------------------------------------------------
    def shift_right(self, tokens: torch.Tensor) -> torch.Tensor:
        """Decoder inputs for outputs ``tokens`` (B, L): <sos> then tokens[:, :-1]."""
        sos = torch.full_like(tokens[:, :1], self.sos)
        return torch.cat([sos, tokens[:, :-1]], dim=1)  # (B, L)

    @torch.no_grad()
    def score(self, batch: Batch, tokens: torch.Tensor) -> torch.Tensor:
        """log p(tokens | batch.x) under teacher forcing, (B,); counts up to the first <eos>."""
        teacher = Batch(x=batch.x, y=tokens, lengths=batch.lengths, aux={"y_in": self.shift_right(tokens)})
        was_training = self.training
        self.eval()
        try:
            logits, _ = self(teacher)  # (B, L, V)
        finally:
            self.train(was_training)
        logp = logits.float().log_softmax(-1).gather(-1, tokens[..., None]).squeeze(-1)  # (B, L)
        return (logp * self.live_mask(tokens)).sum(1)

    def live_mask(self, tokens: torch.Tensor) -> torch.Tensor:
        """(B, L) float: 1 up to and including the first <eos>, 0 after."""
        ended = (tokens == self.eos).long().cumsum(1)
        return ((ended - (tokens == self.eos).long()) == 0).float()

    @torch.no_grad()
    def generate(self, batch: Batch, *, max_len: int | None = None, beam_width: int | None = None) -> torch.Tensor:
        """Decoded outputs (B, L <= max_len), <eos>-terminated and pad-filled after it.

        ``model.decode.max_len`` (when set) wins over the caller's ``max_len`` (the task's
        reference length); without either, twice the source length plus one.
        """
        limit = self.cfg.decode.max_len or max_len or 2 * batch.x.shape[1] + 1
        k = beam_width or self.cfg.decode.beam_width
        return self.greedy(batch, limit) if k == 1 else self.beam(batch, limit, k)

    def greedy(self, batch: Batch, max_len: int) -> torch.Tensor:
        state = self.encode(batch)
        B = batch.x.shape[0]
        tok = torch.full((B,), self.sos, dtype=torch.long, device=batch.x.device)
        done = torch.zeros(B, dtype=torch.bool, device=tok.device)
        out = []
        for _ in range(max_len):
            logits, state = self.step(tok, state)
            tok = logits.argmax(-1).masked_fill(done, self.pad)  # (B,)
            out.append(tok)
            done = done | (tok == self.eos)
            if bool(done.all()):
                break
        return torch.stack(out, 1)  # (B, L)

    def beam(self, batch: Batch, max_len: int, k: int) -> torch.Tensor:
        """Beam search on summed log-probabilities (no length penalty): returns the best beam."""
        state = {n: v.repeat_interleave(k, 0) for n, v in self.encode(batch).items()}  # (B*k, ...)
        B, V, dev = batch.x.shape[0], self.vocab, batch.x.device
        scores = torch.full((B, k), float("-inf"), device=dev)
        scores[:, 0] = 0.0  # one live beam at the start, so the first step yields distinct beams
        finished_row = torch.full((V,), float("-inf"), device=dev)
        finished_row[self.pad] = 0.0  # an ended beam can only extend with pad, at no cost
        seqs = torch.zeros(B, k, 0, dtype=torch.long, device=dev)
        done = torch.zeros(B, k, dtype=torch.bool, device=dev)
        tok = torch.full((B * k,), self.sos, dtype=torch.long, device=dev)
        offsets = torch.arange(B, device=dev)[:, None] * k  # (B, 1)
        for t in range(max_len):
            logits, state = self.step(tok, state)
            logp = F.log_softmax(logits.float(), -1).view(B, k, V)
            logp = torch.where(done[..., None], finished_row, logp)
            scores, idx = (scores[..., None] + logp).view(B, k * V).topk(k, dim=-1)  # (B, k)
            parent, tok2 = idx // V, idx % V  # (B, k)
            seqs = torch.cat([seqs.gather(1, parent[..., None].expand(-1, -1, t)), tok2[..., None]], -1)
            done = done.gather(1, parent) | (tok2 == self.eos)
            flat = (parent + offsets).view(-1)  # (B*k,) rows of the parents
            state = {n: v.index_select(0, flat) for n, v in state.items()}
            tok = tok2.view(-1)
            if bool(done.all()):
                break
        best = scores.argmax(-1)  # (B,)
        return seqs[torch.arange(B, device=dev), best]  # (B, L)
