"""Base class for every config section: typed, frozen, no unknown keys."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Section(BaseModel):
    """A config section. Unknown keys are errors; instances are immutable.

    Change a config by rebuilding it (``bench.config.apply_overrides``), never with
    ``model_copy(update=...)``, which skips validation.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True)
