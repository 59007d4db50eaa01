"""The ``train`` section: steps, batches, validation, precision and devices, checkpoints (``TrainConfig``),
and its ``early_stop`` subsection (``EarlyStopConfig``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.schema import NOT_IDENTITY, Section


class EarlyStopConfig(Section):
    metric: str = Field("val/acc", description="validation metric to watch, e.g. val/acc")
    threshold: float = Field(description="stop once the metric reaches this (>= for max-metrics, <= for min)")


class TrainConfig(Section):
    max_steps: int = Field(1000, ge=1, description="optimizer steps")
    batch_size: int = Field(64, ge=1, description="sequences per step (per device)")
    val_every: int = Field(100, ge=1, description="validate every N steps (and at the last step)")
    val_batches: int = Field(4, ge=1, description="batches per validation")
    precision: Literal["32-true", "16-mixed", "bf16-mixed", "bf16-true", "64-true"] = Field(
        "32-true", description="Lightning precision; bf16-mixed for autocast on GPU"
    )
    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps"] = Field("auto", description="Lightning accelerator")
    devices: int | Literal["auto"] = Field(1, description="devices per node (Lightning)")
    strategy: str = Field("auto", description="Lightning strategy, e.g. ddp_spawn")
    num_nodes: int = Field(1, ge=1, description="nodes for multi-node DDP")
    deterministic: bool = Field(False, description="torch deterministic algorithms (slower on GPU)")
    threads: int | None = Field(
        1,
        ge=1,
        json_schema_extra=NOT_IDENTITY,
        description="torch intra-op threads "
        "per process; small RNNs are 2.7-12x faster with 1 than 2 on a busy 2-core "
        "machine; null = torch default",
    )
    flush_denormal: bool = Field(
        True,
        json_schema_extra=NOT_IDENTITY,
        description="flush denormal floats to zero on CPU; long LSTM backward chains were ~6x slower with denormals",
    )
    compile: bool = Field(False, description="torch.compile the model (falls back to eager on failure)")
    early_stop: EarlyStopConfig | None = Field(None, description="stop when a val metric crosses a threshold")
    diverge_loss: float | None = Field(
        None, gt=0, description="training loss above this marks the run diverged (NaN/Inf always does)"
    )
    checkpoint_every: int | None = Field(
        200,
        ge=1,
        json_schema_extra=NOT_IDENTITY,
        description="save "
        "<run>/checkpoints/last.ckpt every N steps and at the last step (atomic), "
        "for `resume=true` and `seqbench eval`; null = never",
    )
