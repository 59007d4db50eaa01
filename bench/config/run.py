"""``RunConfig``: the whole tree of one run, its sections (``optim.py``, ``train.py``, ``evaluation.py``,
``tracking.py``, ``diagnostics.py`` beside this module) under one root, the rules that span sections, and
the run's identity (``config_hash``).

``task`` and ``model`` are discriminated unions on ``name`` of the configs in the registries (``Registered``),
read when ``RunConfig``'s schema is built (on its first use, after start-up: ``bench/startup.py``), so a task
or model registered in ``tasks/``, ``models/`` or a plug-in is configurable the day it lands;
``refresh_unions`` builds the schema again when an entry arrived after it (an import path, a notebook's
``@MODELS.register``). Importing this module builds nothing.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Annotated, Any, Union

import yaml
from pydantic import Field, GetCoreSchemaHandler, model_validator
from pydantic_core import CoreSchema

from seqbench.bench.composition import DEFAULT_NAMES
from seqbench.bench.config.diagnostics import DiagnosticsConfig
from seqbench.bench.config.evaluation import EvalConfig
from seqbench.bench.config.optim import OptimConfig
from seqbench.bench.config.tracking import TrackingConfig
from seqbench.bench.config.train import TrainConfig
from seqbench.bench.core.registry import MODELS, TASKS, Registry
from seqbench.bench.core.schema import NOT_IDENTITY, Section, identity
from seqbench.bench.startup import start
from seqbench.models.configs.base import ModelConfig
from seqbench.tasks.configs.base import TaskConfig


def _union(configs: list[type]) -> Any:
    if len(configs) == 1:
        return configs[0]
    # a union of a tuple known at run time has no `X | Y` spelling (ruff's UP007 fix drops the Union)
    return Annotated[Union[tuple(configs)], Field(discriminator="name")]  # noqa: UP007


_built_from: dict[str, int] = {}  # registry kind -> its generation when RunConfig's schema read it


class Registered:
    """The type of ``RunConfig.task`` and ``.model`` beside their base class (what a checker reads): the
    union, tagged by ``name``, of the configs in ``reg`` when pydantic builds RunConfig's schema, after
    start-up, so whichever code builds the first config, the union holds the installed plug-ins."""

    def __init__(self, reg: Registry[Any]):
        self.reg = reg

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> CoreSchema:
        start()
        _built_from[self.reg.kind] = self.reg.generation
        return handler.generate_schema(_union(self.reg.configs()))


def _default_task():
    return TASKS.get(DEFAULT_NAMES["task"]).config_cls()


def _default_model():
    return MODELS.get(DEFAULT_NAMES["model"]).config_cls()


class RunConfig(Section):
    task: Annotated[TaskConfig, Registered(TASKS)] = Field(default_factory=_default_task, description="what to learn")
    model: Annotated[ModelConfig, Registered(MODELS)] = Field(
        default_factory=_default_model, description="architecture"
    )
    optim: OptimConfig = Field(default_factory=OptimConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig, json_schema_extra=NOT_IDENTITY)
    diagnostics: DiagnosticsConfig = Field(
        default_factory=DiagnosticsConfig,  # only observes
        json_schema_extra=NOT_IDENTITY,
    )
    seed: int = Field(0, ge=0, description="seeds weights, data streams and dropout")
    out_dir: Path = Field(
        Path("outputs"), json_schema_extra=NOT_IDENTITY, description="root for runs/, wandb/, reports/"
    )
    run_id: str | None = Field(
        None,
        pattern=r"^[A-Za-z0-9._-]+$",
        json_schema_extra=NOT_IDENTITY,
        description="run folder name; default derived",
    )
    resume: bool = Field(
        False,
        json_schema_extra=NOT_IDENTITY,
        description="continue the newest unfinished run "
        "with the same config (or run_id) from its last checkpoint; a finished one is returned as is",
    )

    @model_validator(mode="after")
    def _cross_field(self) -> RunConfig:
        t, m = self.task, self.model
        kind = t.facts.output_kind
        if kind not in m.supported_kinds:
            ok = [e.name for e in MODELS if kind in e.config_cls.supported_kinds]
            raise ValueError(
                f"model.name: {m.name!r} cannot produce the {kind.value} output task "
                f"{t.name!r} needs; choose from {', '.join(ok)}"
            )
        if t.facts.causal and m.sees_future():
            raise ValueError(
                f"model.bidirectional: a bidirectional model sees the future but task {t.name!r} "
                "is causal; set model.bidirectional=false"
            )
        if (
            self.optim.decay_from is not None
            and not self.optim.warmup_steps <= self.optim.decay_from < self.train.max_steps
        ):
            raise ValueError(
                f"optim.decay_from: {self.optim.decay_from} must lie in [optim.warmup_steps="
                f"{self.optim.warmup_steps}, train.max_steps={self.train.max_steps}); leave it "
                "null to decay from the end of warmup"
            )
        if self.optim.warmup_steps and self.optim.warmup_steps >= self.train.max_steps:
            raise ValueError(
                f"optim.warmup_steps: {self.optim.warmup_steps} >= train.max_steps="
                f"{self.train.max_steps}; the run would never reach the peak lr"
            )
        if self.diagnostics.gradients and self.train.compile:
            raise ValueError(
                "diagnostics.gradients: the gradient-through-time probe needs a second backward "
                "through the eager graph, which compiled graphs refuse; set train.compile=false"
            )
        for n in self.eval.lengths:  # every length the run builds, checked before any training
            t.check_length(n)
        m.check_positions(t.seq_len(), "the training sequence")
        for n in dict.fromkeys(self.eval.lengths):
            m.check_positions(t.positions(n), f"eval.lengths entry {n}")
        es = self.train.early_stop
        if es is not None:
            allowed = t.facts.keys("val")
            if es.metric not in allowed:
                raise ValueError(
                    f"train.early_stop.metric: {es.metric!r} is not reported by task {t.name!r}; "
                    f"choose from {', '.join(allowed)}"
                )
        return self

    # -- identity -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def config_hash(self) -> str:
        """Hash of everything that changes the experiment: every field not marked ``NOT_IDENTITY``
        (where or how the run is logged, observed or scheduled)."""
        return hashlib.sha256(json.dumps(identity(self), sort_keys=True).encode()).hexdigest()[:12]

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


def refresh_unions() -> None:
    """Build ``RunConfig``'s schema again (its unions read the registries anew) if an entry was registered
    after it was built: an import path a config names, a notebook's ``@MODELS.register``."""
    if RunConfig.__pydantic_complete__ and any(_built_from.get(r.kind) != r.generation for r in (TASKS, MODELS)):
        RunConfig.model_rebuild(force=True)
