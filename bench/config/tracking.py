"""The ``tracking`` section: where and how a run is logged to W&B (``TrackingConfig``; never part of the
config hash). The W&B calls themselves are ``bench/training/tracking.py``'s."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from seqbench.bench.core.schema import Section


class TrackingConfig(Section):
    wandb: Literal["off", "offline", "online"] = Field(
        "offline", description="W&B mode; offline writes under out_dir/wandb for `wandb sync`"
    )
    project: str = Field("seqbench", min_length=1, description="W&B project")
    group: str | None = Field(None, description="W&B group (sweeps use the study name)")
    tags: list[str] = Field(default_factory=list, description="W&B tags")
    init_timeout: float = Field(
        10.0,
        gt=0,
        description="seconds W&B may take to start a run; online, a server "
        "not reached by then is given up once per process and runs log offline",
    )
