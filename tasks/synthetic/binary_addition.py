"""Binary addition: the data and the exact memoryless baseline (the config and the worked example
are in ``tasks/synthetic/configs/binary_addition.py``)."""

from __future__ import annotations

import functools

import torch

from seqbench.bench.core.contract import IGNORE, Batch, TaskSpec
from seqbench.bench.core.registry import TASKS
from seqbench.tasks.base import TokenTask
from seqbench.tasks.synthetic.base import SyntheticTask
from seqbench.tasks.synthetic.configs.binary_addition import BinaryAdditionConfig  # the config, beside its module
from seqbench.tasks.synthetic.state import slots_baseline

PLUS, SEP, BLANK = 2, 3, 4  # input tokens after the bits 0 and 1
END = 2  # target classes: the bits 0 and 1, then the end of the sum


def little_endian_sum(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """(B, W) bits of a and b, least significant first -> the W low bits of a + b, without a loop
    over positions: the carry into bit j is the generate bit (a & b) of the last position below j
    where a and b agree (there the carry is generated or killed; elsewhere it propagates)."""
    pos = torch.arange(a.shape[1], device=a.device).expand_as(a)  # (B, W)
    stop = torch.where(a == b, pos, -1).cummax(1).values  # last agreeing position at or below j
    below = torch.cat([torch.full_like(stop[:, :1], -1), stop[:, :-1]], 1)  # ... strictly below j
    carry = torch.where(below >= 0, (a & b).gather(1, below.clamp(min=0)), 0)
    return a ^ b ^ carry


def _transitions(a_free: bool, b_free: bool, c: int) -> list[tuple[float, int, int]]:
    """(probability, sum bit, carry out) at one position for a carry in c; a free bit is a fair coin."""
    out = []
    for a in (0, 1) if a_free else (0,):
        for b in (0, 1) if b_free else (0,):
            p = (0.5 if a_free else 1.0) * (0.5 if b_free else 1.0)
            out.append((p, (a + b + c) % 2, (a + b + c) // 2))
    return out


@functools.cache
def _slots_free(la: int, lb: int) -> tuple[tuple[float, float, float], ...]:
    """For a and b of la and lb independent fair bits (0: the number is 0), per answer slot j:
    ``(P(s_j = 0 and the sum has more than j bits), P(s_j = 1), P(the sum has exactly j bits))``;
    the slots run to max(la, lb) + 1, past which every probability is 0."""
    w = max(la, lb) + 2
    trans = [[_transitions(j < la, j < lb, c) for c in (0, 1)] for j in range(w)]
    alpha = [[1.0, 0.0]]  # P(carry into j = c)
    for j in range(w - 1):
        nxt = [0.0, 0.0]
        for c in (0, 1):
            for p, _, c2 in trans[j][c]:
                nxt[c2] += alpha[j][c] * p
        alpha.append(nxt)
    beta = [[0.0, 0.0] for _ in range(w)] + [[1.0, 0.0]]  # P(no set sum bit at or above j | carry into j)
    for j in reversed(range(w)):
        beta[j] = [sum(p * beta[j + 1][c2] for p, s, c2 in trans[j][c] if s == 0) for c in (0, 1)]
    slots = []
    for j in range(w):
        zero = sum(alpha[j][c] * p * (1 - beta[j + 1][c2]) for c in (0, 1) for p, s, c2 in trans[j][c] if s == 0)
        one = sum(alpha[j][c] * p for c in (0, 1) for p, s, _ in trans[j][c] if s == 1)
        if j == 0:
            end = beta[0][0]
        else:
            end = sum(alpha[j - 1][c] * p * beta[j][c2] for c in (0, 1) for p, s, c2 in trans[j - 1][c] if s == 1)
        slots.append((zero, one, end))
    return tuple(slots)


@functools.cache
def slot_distribution(n: int) -> tuple[tuple[float, float, float], ...]:
    """Per answer slot j of a problem of length n: the probabilities that its target is bit 0, bit 1
    or the end token (their sum: that it is scored), exactly as ``generate`` draws: a of la bits
    uniform over 1..n-2, b of the other n-1-la, each uniform among its nonzero values (inclusion-
    exclusion over a = 0 and b = 0 on independent fair bits)."""
    total = [[0.0, 0.0, 0.0] for _ in range(n)]
    for la in range(1, n - 1):
        lb = n - 1 - la
        terms = ((la, lb, 1.0), (0, lb, -(2.0**-la)), (la, 0, -(2.0**-lb)), (0, 0, 2.0 ** -(la + lb)))
        norm = (1 - 2.0**-la) * (1 - 2.0**-lb) * (n - 2)  # the nonzero draws, and the mean over la
        for ka, kb, weight in terms:
            for j, probs in enumerate(_slots_free(ka, kb)):
                for k in range(3):
                    total[j][k] += weight * probs[k] / norm
    return tuple((max(z, 0.0), max(o, 0.0), max(e, 0.0)) for z, o, e in total)


@TASKS.module("binary_addition")
class BinaryAdditionTask(SyntheticTask, TokenTask):
    cfg: BinaryAdditionConfig  # the config beside this module

    # input tokens: 0, 1 = bits, 2 = '+', 3 = separator, 4 = blank; targets: 0, 1 = bits, 2 = end
    @property
    def spec(self) -> TaskSpec:
        # the end token's slot depends on every input bit, the first of them 2n positions back
        return self.build_spec(n_classes=3, vocab_size=5, dependency=2 * self.cfg.length)

    def generate(self, g, batch_size, length, device) -> Batch:
        n, B = length, batch_size
        if n < 3:
            raise ValueError(f"binary_addition: problem length {n} < 3 (a+b needs a bit each and the '+')")
        pos = torch.arange(n, device=device).expand(B, n)  # (B, n)
        la = torch.randint(1, n - 1, (B, 1), generator=g, device=device)  # bits of a; b has n-1-la
        in_a, in_b = pos < la, pos > la
        bits = torch.randint(0, 2, (B, n), generator=g, device=device)
        redraw = ~((bits * in_a).any(1) & (bits * in_b).any(1))  # a or b is 0: draw its row again
        while redraw.any():
            bits[redraw] = torch.randint(0, 2, (int(redraw.sum()), n), generator=g, device=device)
            redraw = ~((bits * in_a).any(1) & (bits * in_b).any(1))
        a = bits * in_a  # (B, n) little-endian, zero above bit la-1
        b = bits.gather(1, (pos + la + 1).clamp(max=n - 1)) * (pos < n - 1 - la)  # (B, n) b's bits from slot 0
        s = little_endian_sum(a, b)  # (B, n); a + b < 2^(n-1), so n slots hold its bits and the end
        width = (s * (pos + 1)).amax(1, keepdim=True)  # (B, 1) bits of the sum, without high zeros
        answer = torch.where(pos < width, s, torch.where(pos == width, END, IGNORE))  # (B, n)
        x = torch.full((B, 2 * n + 1), BLANK, dtype=torch.long, device=device)  # (B, 2n+1)
        x[:, :n] = torch.where(pos == la, PLUS, bits)
        x[:, n] = SEP
        y = torch.full_like(x, IGNORE)
        y[:, n + 1 :] = answer
        return Batch(x=x, y=y, score_mask=y != IGNORE)

    def baseline(self) -> dict[str, float]:  # per slot: the likeliest target, and the entropy where scored
        return slots_baseline(self.cfg.length_min, self.cfg.length, slot_distribution)
