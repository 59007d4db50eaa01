"""Learning-rate schedules as pure functions of the step (multipliers of the peak lr)."""

from __future__ import annotations

import math


def lr_multiplier(
    step: int,
    *,
    warmup_steps: int,
    max_steps: int,
    schedule: str,
    min_ratio: float = 0.0,
    decay_from: int | None = None,
) -> float:
    """Multiplier of the peak lr for the update at ``step`` (0-based).

    Warmup is linear from 1/(warmup+1) to 1 over ``warmup_steps`` (never exactly 0,
    so step 0 still moves). The decay starts at ``decay_from`` (default: the end of
    warmup; the peak lr holds from warmup's end until then): constant, linear or cosine
    decay to ``min_ratio`` at ``max_steps``, or inverse square root (Vaswani et al. 2017,
    Sec. 5.3: ``sqrt(decay_from / step)``). A "no warmup" arm with ``decay_from`` set to its
    warmup arm's ``warmup_steps`` differs from that arm by the warmup only; without it,
    inverse_sqrt after no warmup decays from step 1 (a tenth of the lr by step 100).
    """
    if warmup_steps and step < warmup_steps:
        return (step + 1) / (warmup_steps + 1)
    start = warmup_steps if decay_from is None else max(decay_from, warmup_steps)
    if schedule == "constant":
        return 1.0
    if schedule == "inverse_sqrt":
        return math.sqrt(max(start, 1) / max(step, 1)) if step >= max(start, 1) else 1.0
    span = max(max_steps - start, 1)
    progress = min(max(step - start, 0) / span, 1.0)
    if schedule == "linear":
        frac = 1.0 - progress
    elif schedule == "cosine":
        frac = 0.5 * (1.0 + math.cos(math.pi * progress))
    else:
        raise ValueError(f"optim.schedule: unknown {schedule!r}; choose from constant, linear, cosine, inverse_sqrt")
    return min_ratio + (1.0 - min_ratio) * frac
