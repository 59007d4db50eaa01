"""Base class for every config section: typed, frozen, no unknown keys, finite numbers."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, field_validator

INT_LIMIT = 2**31 - 1  # sizes, steps and lengths beyond this are typos, not experiments


class Section(BaseModel):
    """A config section. Unknown keys are errors; instances are immutable.

    Change a config by rebuilding it (``bench.config.build_config`` or ``override``), never with
    ``model_copy(update=...)``, which skips validation.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, allow_inf_nan=False)

    @field_validator("*", mode="after")
    @classmethod
    def _bounded_ints(cls, v: Any) -> Any:
        values = v if isinstance(v, (list, tuple)) else [v]
        for x in values:
            if isinstance(x, int) and not isinstance(x, bool) and abs(x) > INT_LIMIT:
                raise ValueError(f"{x} is out of range (integers here must be below 2**31)")
        return v
