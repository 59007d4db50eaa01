"""What the tasks trained on a range of lengths share: targets scored at the last position or at every
one (the state-tracking tasks: parity, modular_arithmetic, cycle_navigation, permutation, even_pairs),
and the arithmetic of memoryless baselines over a drawn range of training lengths (those, and the
answer-slot tasks stack_manipulation and binary_addition)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

from seqbench.bench.core.contract import IGNORE


def scored_targets(state: torch.Tensor, scored: str) -> torch.Tensor:
    """(B, T) running states -> targets: every position, or the last alone (IGNORE elsewhere)."""
    if scored == "every":
        return state
    y = torch.full_like(state, IGNORE)
    y[:, -1] = state[:, -1]
    return y


def memoryless_over_lengths(
    per_position: Sequence[tuple[float, float]], lo: int, hi: int, scored: str
) -> dict[str, float]:
    """Metrics of a predictor that sees only the current token and its position, over training lengths
    drawn uniformly from ``[lo, hi]``. ``per_position[t - 1]`` is its ``(accuracy, loss)`` at position
    ``t`` (the same at every length: a prefix's state does not depend on what follows). ``last``: the
    mean over lengths of the last position's values; ``every``: accuracy over all scored positions (the
    harness counts them), loss the mean over lengths of each length's per-position mean (each batch has
    one length and its loss is a mean over its positions)."""
    ns = range(lo, hi + 1)
    if scored == "last":
        return {
            "loss": sum(per_position[n - 1][1] for n in ns) / len(ns),
            "acc": sum(per_position[n - 1][0] for n in ns) / len(ns),
        }
    return {
        "loss": sum(sum(loss for _, loss in per_position[:n]) / n for n in ns) / len(ns),
        "acc": sum(sum(acc for acc, _ in per_position[:n]) for n in ns) / sum(ns),
    }


def free_then_uniform(n_classes: int, hi: int) -> list[tuple[float, float]]:
    """Per-position ``(accuracy, loss)`` where the first answer is read off the token and every later
    one is uniform over ``n_classes`` and independent of the current token."""
    return [(1.0, 0.0)] + [(1.0 / n_classes, math.log(n_classes))] * (hi - 1)


def slots_baseline(lo: int, hi: int, slots: Callable[[int], Sequence[Sequence[float]]]) -> dict[str, float]:
    """Metrics of a predictor that knows the length and the answer slot but nothing of the input, over
    lengths drawn uniformly from ``[lo, hi]``. ``slots(n)[j]`` is the probability of each target class at
    answer slot ``j`` of length ``n`` (summing to the probability that the slot is scored). It guesses
    each slot's likeliest class: accuracy over all scored slots; the loss is the mean over lengths of each
    length's per-slot cross-entropy of the conditional distribution (each batch has one length)."""
    correct = scored = loss = 0.0
    ns = range(lo, hi + 1)
    for n in ns:
        dist = slots(n)
        mass = [sum(p) for p in dist]
        correct += sum(max(p) for p in dist)
        scored += sum(mass)
        nll = -sum(q * math.log(q / m) for p, m in zip(dist, mass) for q in p if q > 0)
        loss += nll / sum(mass)
    return {"loss": loss / len(ns), "acc": correct / scored}
