"""Stack manipulation: the data and the exact memoryless baseline (the config and the worked
example are in ``tasks/synthetic/configs/stack_manipulation.py``)."""

from __future__ import annotations

import functools

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.stack_manipulation import StackManipulationConfig  # the config, beside its module
from seqbench.tasks.synthetic.state import slots_baseline

POP, PUSH0, PUSH1, SEP, BLANK = 2, 3, 4, 5, 6  # input tokens after the stack bits 0 and 1 (Delétang's ids)
END = 2  # target classes: the bits 0 and 1, then the end of the stack


def final_stack(tokens: torch.Tensor) -> torch.Tensor:
    """(B, n) inputs (bits push themselves, then POP/PUSH0/PUSH1) -> (B, n + 1) the final stack top to
    bottom, then END, then IGNORE; without a loop over positions. The height after each token is the
    walk of +1 (a push) and -1 (a pop) held at 0: ``h_t = S_t - min(0, min_{k <= t} S_k)`` with S
    its running sum. A push survives when the height never falls below its level afterwards; the
    survivors, one per level, are the final stack."""
    B, n = tokens.shape
    push = tokens != POP
    step = torch.where(push, 1, -1)  # (B, n)
    run = step.cumsum(1)
    height = run - run.cummin(1).values.clamp(max=0)  # (B, n) stack height after each token
    later_min = height.flip(1).cummin(1).values.flip(1)  # lowest height from each token on
    survives = push & (later_min == height)
    top = height[:, -1:]  # (B, 1) final height
    value = torch.where(tokens >= PUSH0, tokens - PUSH0, tokens)  # the bit a push puts on the stack
    slot = torch.where(survives, top - height, n + 1)  # top to bottom; n + 1: a scratch slot, dropped
    out = torch.full((B, n + 2), IGNORE, dtype=torch.long, device=tokens.device)
    out.scatter_(1, slot, torch.where(survives, value, IGNORE))
    out.scatter_(1, top, END)
    return out[:, : n + 1]


@functools.cache
def height_distribution(n: int) -> tuple[float, ...]:
    """P(H = h), h = 0..n, for the final stack height H of a problem of length n as ``generate`` draws
    it: a stack of s bits, s uniform in 1..n-1 (n = 1: 1), then n - s actions, a push with 2/3."""
    if n == 1:
        return (0.0, 1.0)
    mass = [0.0] * (n + 1)  # over the samples already in their actions: P(s < t, height after t tokens = h)
    for t in range(1, n + 1):
        start = list(mass)
        if t - 1 >= 1:
            start[t - 1] += 1.0 / (n - 1)  # the samples whose stack ends at t - 1 start their actions
        mass = [0.0] * (n + 1)
        for h, p in enumerate(start):
            if p:
                mass[min(h + 1, n)] += p * 2 / 3
                mass[max(h - 1, 0)] += p / 3
    return tuple(mass)


def final_slots(n: int) -> list[tuple[float, float, float]]:
    """Per answer slot j of length n: (end, bit 0, bit 1) probabilities, the end with P(H = j) and each
    bit with P(H > j) / 2 (H: the final stack's height)."""
    dist = height_distribution(n)
    above = [sum(dist[j + 1 :]) for j in range(n + 1)]
    return [(dist[j], above[j] / 2, above[j] / 2) for j in range(n + 1)]


@TASKS.module("stack_manipulation")
class StackManipulationTask(SyntheticTask, TokenTask):
    cfg: StackManipulationConfig  # the config beside this module

    # input tokens: 0, 1 = stack bits, 2 = POP, 3 = PUSH 0, 4 = PUSH 1, 5 = separator, 6 = blank;
    # targets: 0, 1 = bits, 2 = end
    @property
    def spec(self) -> TaskSpec:
        # the last answer slot depends on every input token, the first of them 2n+1 positions back
        return self.build_spec(n_classes=3, vocab_size=7, dependency=2 * self.cfg.length + 1)

    def generate(self, g, batch_size, length, device) -> Batch:
        n, B = length, batch_size
        if n < 1:
            raise ValueError(f"stack_manipulation: problem length {n} < 1 (the stack needs a bit)")
        pos = torch.arange(n, device=device).expand(B, n)  # (B, n)
        s = torch.randint(1, max(n, 2), (B, 1), generator=g, device=device)  # initial stack size, 1..n-1
        bits = torch.randint(0, 2, (B, n), generator=g, device=device)
        actions = torch.randint(POP, PUSH1 + 1, (B, n), generator=g, device=device)
        tokens = torch.where(pos < s, bits, actions)  # (B, n)
        x = torch.full((B, 2 * n + 2), BLANK, dtype=torch.long, device=device)  # (B, 2n+2)
        x[:, :n] = tokens
        x[:, n] = SEP
        y = torch.full_like(x, IGNORE)
        y[:, n + 1 :] = final_stack(tokens)
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:
        return slots_baseline(self.cfg.length_min, self.cfg.length, final_slots)
