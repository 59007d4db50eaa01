"""The ``diagnostics`` section: what a run records about its own training (``DiagnosticsConfig``; it only
observes, so it is never part of the config hash). The recording is ``bench/training/diagnostics.py``'s."""

from __future__ import annotations

from pydantic import Field

from seqbench.bench.core.schema import Section


class DiagnosticsConfig(Section):
    gradients: bool = Field(
        False,
        description="record gradient through time, per-layer and global gradient "
        "norms and W_hh spectral norms to <run>/diagnostics.json (bench/training/diagnostics.py)",
    )
    every: int = Field(
        100, ge=1, description="record at step 0 and every N optimizer steps; each record costs one extra backward pass"
    )
