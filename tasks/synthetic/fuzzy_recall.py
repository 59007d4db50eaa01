"""Fuzzy in-context recall: the data (the config and the worked example are in
``tasks/synthetic/configs/fuzzy_recall.py``)."""

from __future__ import annotations

import math

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.fuzzy_recall import FuzzyRecallConfig  # the config, beside its module


def first_of_equal(tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
    """(B, n) index of the first pair whose key equals pair i's (same length, same tokens); tokens past
    a key's length must already be zero."""
    same = (tokens[:, :, None] == tokens[:, None]).all(-1) & (lengths[:, :, None] == lengths[:, None])  # (B, n, n)
    return same.int().argmax(-1)  # argmax returns the first maximum: the earliest equal key


@TASKS.module("fuzzy_recall")
class FuzzyRecallTask(SyntheticTask, TokenTask):
    cfg: FuzzyRecallConfig  # the config beside this module

    # tokens: 0 = pad, 1..vocab//2 keys, vocab//2+1..vocab values
    @property
    def spec(self) -> TaskSpec:
        c = self.cfg
        return self.build_spec(n_classes=c.vocab + 1, vocab_size=c.vocab + 1, dependency=c.seq_len())

    def _pairs(self, g, B, device) -> tuple[torch.Tensor, torch.Tensor]:
        """Each pair's slots (B, n, key_len + value_len): tokens, and which slots hold a token."""
        c = self.cfg
        n, K, V, half = c.n_pairs, c.key_len, c.value_len, c.vocab // 2
        lk = torch.randint(1, K + 1, (B, n), generator=g, device=device)
        lv = torch.randint(1, V + 1, (B, n), generator=g, device=device)
        key_on = torch.arange(K, device=device) < lk[..., None]  # (B, n, K)
        keys = torch.randint(1, half + 1, (B, n, K), generator=g, device=device) * key_on
        values = torch.randint(half + 1, c.vocab + 1, (B, n, V), generator=g, device=device)
        first = first_of_equal(keys, lk)  # a key drawn twice keeps one value: recall stays well defined
        values = values.gather(1, first[..., None].expand(-1, -1, V))
        lv = lv.gather(1, first)
        value_on = torch.arange(V, device=device) < lv[..., None]  # (B, n, V)
        return torch.cat([keys, values * value_on], -1), torch.cat([key_on, value_on], -1)

    def generate(self, g, batch_size, length, device) -> Batch:
        c = self.cfg
        if length < c.seq_len():
            raise ValueError(
                f"fuzzy_recall: length {length} is shorter than the layout of {c.n_pairs} pairs ({c.seq_len()})"
            )
        tokens, on = self._pairs(g, batch_size, device)  # (B, n, S)
        order = torch.rand(batch_size, c.n_pairs, generator=g, device=device).argsort(-1)  # query order
        idx = order[..., None].expand_as(tokens)
        value_slot = torch.arange(tokens.shape[-1], device=device) >= c.key_len
        queried = on.gather(1, idx) & value_slot  # (B, n, S): the value tokens of the second pass
        tokens = torch.cat([tokens, tokens.gather(1, idx)], 1).flatten(1)  # (B, 2n*S)
        on = torch.cat([on, on.gather(1, idx)], 1).flatten(1)
        scored = torch.cat([torch.zeros_like(queried), queried], 1).flatten(1)
        pack = on.int().argsort(dim=-1, stable=True)  # empty slots first (the front padding), tokens in order
        x, scored = tokens.gather(1, pack), scored.gather(1, pack)
        pad = length - x.shape[1]
        x = torch.nn.functional.pad(x, (pad, 0))
        scored = torch.nn.functional.pad(scored, (pad, 0))
        y = torch.full_like(x, IGNORE)
        y[:, :-1] = torch.where(scored[:, 1:], x[:, 1:], IGNORE)  # each queried value token, one step early
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        n_values = self.cfg.vocab - self.cfg.vocab // 2
        return {"loss": math.log(n_values), "acc": 1.0 / n_values}
