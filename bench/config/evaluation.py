"""The ``eval`` section: what the end of a run evaluates (``EvalConfig``: the test split, extra lengths)."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from seqbench.bench.core.schema import Section


class EvalConfig(Section):
    lengths: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list, description="extra sequence lengths to evaluate at the end (length generalisation)"
    )
    test: bool = Field(True, description="evaluate the test split at the end")
    test_batches: int = Field(8, ge=1, description="batches per final evaluation")
