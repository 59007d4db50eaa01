"""Permutation (group word problem): the data (the config and the worked example are in
``tasks/synthetic/configs/permutation.py``)."""

from __future__ import annotations

import functools
import itertools

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.permutation import PermutationConfig  # the config, beside its module
from seqbench.tasks.synthetic.state import free_then_uniform, memoryless_over_lengths, scored_targets


def is_even(p: tuple[int, ...]) -> bool:
    """Whether a permutation has an even number of inversions."""
    return sum(a > b for a, b in itertools.combinations(p, 2)) % 2 == 0


@functools.cache
def elements(group: str) -> tuple[tuple[int, ...], ...]:
    """The group's permutations in token order: ``itertools.permutations`` order, the even ones for A_k."""
    k = int(group[1:])
    perms = tuple(itertools.permutations(range(k)))
    return tuple(p for p in perms if is_even(p)) if group[0] == "A" else perms


@functools.cache
def cayley_table(group: str) -> tuple[tuple[int, ...], ...]:
    """``table[a][b]``: the token of ``p_a o p_b``, i.e. ``i -> p_a(p_b(i))``."""
    perms = elements(group)
    index = {p: i for i, p in enumerate(perms)}
    return tuple(tuple(index[tuple(a[j] for j in b)] for b in perms) for a in perms)


@TASKS.module("permutation")
class PermutationTask(SyntheticTask, TokenTask):
    cfg: PermutationConfig  # the config beside this module

    def __init__(self, cfg: PermutationConfig, seed: int = 0):
        super().__init__(cfg, seed)
        self._tables: dict[torch.device, torch.Tensor] = {}  # the Cayley table, one copy per device

    # tokens and classes: the group's elements, 0 = the identity
    @property
    def spec(self) -> TaskSpec:
        n = len(elements(self.cfg.group))
        return self.build_spec(n_classes=n, vocab_size=n, dependency=self.cfg.length)

    def table(self, device: torch.device) -> torch.Tensor:
        if device not in self._tables:
            self._tables[device] = torch.tensor(cayley_table(self.cfg.group), device=device)  # (|G|, |G|)
        return self._tables[device]

    def generate(self, g, batch_size, length, device) -> Batch:
        mul = self.table(device)
        x = torch.randint(0, mul.shape[0], (batch_size, length), generator=g, device=device)  # (B, T)
        state = torch.empty_like(x)
        state[:, 0] = x[:, 0]
        for t in range(1, length):
            state[:, t] = mul[state[:, t - 1], x[:, t]]  # state_t = state_{t-1} o x_t
        y = scored_targets(state, self.cfg.scored)
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        c = self.cfg
        per_position = free_then_uniform(len(elements(c.group)), c.length)
        return memoryless_over_lengths(per_position, c.length_min, c.length, c.scored)
