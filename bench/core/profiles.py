"""``Profile``: the two budgets every claim and the probe battery come in, one type for both.

``quick`` decides on 2 CPU cores in minutes (tiny widths, short budgets); ``paper`` is the published
protocol, for a GPU. A claim file has a block for each (``sweeps/claims/schema.py``), the probe battery a
``Battery`` of each (``sweeps/probes.py``); ``verify --profile`` and ``probe --profile`` take one.
"""

from __future__ import annotations

from typing import Literal, TypeGuard

from seqbench.bench.core.errors import UserError

Profile = Literal["quick", "paper"]
PROFILES: tuple[Profile, ...] = ("quick", "paper")


def is_profile(name: str) -> TypeGuard[Profile]:
    return name in PROFILES


def as_profile(name: str, field: str = "--profile") -> Profile:
    """``name`` as a ``Profile``, or one line naming ``field`` and the allowed values."""
    if not is_profile(name):
        raise UserError(f"{field}: unknown profile {name!r}; allowed: {', '.join(PROFILES)}")
    return name
