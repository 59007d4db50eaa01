"""RunConfig: one typed, frozen, validated tree per run.

``task`` and ``model`` are discriminated unions on ``name`` of the configs in the registries, read when
``RunConfig``'s schema is built (on its first use, after start-up: ``bench/startup.py``), so a task or model
registered in ``tasks/``, ``models/`` or a plug-in is configurable the day it lands; the schema is built again
before a validation when an entry arrived after it (an import path, a notebook's ``@MODELS.register``).
Importing this module builds nothing. Configs come from YAML and/or dotted ``key=value`` overrides, composed
into one dict by ``bench/composition.py`` (whose names this module re-exports); every change rebuilds and
re-validates the whole tree.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, Union

import yaml
from pydantic import Field, GetCoreSchemaHandler, ValidationError, model_validator
from pydantic_core import CoreSchema

from seqbench.bench.composition import (
    CHOICES,
    DEFAULT_NAMES,
    Composed,
    chosen,
    compose,
    foreign_at,
    foreign_field,
    notes,
)
from seqbench.bench.core.errors import UserError, validation_problems
from seqbench.bench.core.registry import MODELS, TASKS, Registry
from seqbench.bench.core.schema import ADDED_LATER, NOT_IDENTITY, Section, identity
from seqbench.bench.core.settings import comma_lists, load_yaml, parse_value, safe_load
from seqbench.bench.startup import start
from seqbench.models.configs.base import ModelConfig
from seqbench.tasks.configs import base as task_configs
from seqbench.tasks.configs.base import TaskConfig

__all__ = [
    "DEFAULT_NAMES",
    "Composed",
    "RunConfig",
    "build_config",
    "chosen",
    "compose",
    "foreign_field",
    "load_config",
    "load_yaml",
    "metric_goal_of",
    "notes",
    "override",
    "parse_value",
    "safe_load",
    "start",
    "validate",
]


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


def metric_goal_of(metric: str, tasks: list[str]) -> str:
    """``"maximize"`` or ``"minimize"`` for a metric key, as the runs' tasks declare it (a plug-in task's
    too: the registries are started first). ``tasks/configs/base.py``'s, for callers of the config floor."""
    start()
    return task_configs.metric_goal_of(metric, tasks)


ADAM_BETAS = (0.9, 0.999)  # torch.optim.Adam's default (beta1, beta2)


class OptimConfig(Section):
    optimizer: Literal["adam", "adamw", "sgd", "radam"] = Field("adam", description="optimizer family")
    lr: float = Field(1e-3, gt=0, description="peak learning rate (after warmup)")
    weight_decay: float = Field(0.0, ge=0, description="L2 (adam/sgd/radam) or decoupled (adamw) decay")
    momentum: float = Field(0.9, ge=0, lt=1, description="sgd momentum")
    # a list (not a tuple) so Section's bool guard sees its items: `optim.betas=[false, 0.98]` is refused
    betas: list[Annotated[float, Field(ge=0, lt=1)]] = Field(
        default_factory=lambda: list(ADAM_BETAS),
        min_length=2,
        max_length=2,
        description="adam/adamw/radam (beta1, beta2), each in [0, 1); Vaswani et al. and Xiong et al. use "
        "[0.9, 0.98]; sgd refuses them (it has optim.momentum)",
        json_schema_extra=ADDED_LATER,
    )
    # ADDED_LATER: unset, the config hash is the one runs recorded before the field existed
    beta2: float | None = Field(
        None,
        ge=0,
        lt=1,
        description="adam/adamw/radam beta2 alone (as Hugging Face's adam_beta2), in place of betas[1]: a "
        "sweep's values are scalars, so sweep this to vary beta2; null = betas[1]",
        json_schema_extra=ADDED_LATER,
    )
    warmup_steps: int = Field(0, ge=0, description="linear warmup from 0 to lr over these steps")
    schedule: Literal["constant", "linear", "cosine", "inverse_sqrt"] = Field(
        "constant", description="shape after warmup"
    )
    # ADDED_LATER: unset, the config hash is the one runs recorded before the field existed
    decay_from: int | None = Field(
        None,
        ge=0,
        description="step the decay (linear, cosine, inverse_sqrt) starts from; null = the end of "
        "warmup. Set it to the warmup arm's warmup_steps so that a no-warmup arm differs by the warmup only "
        "(inverse_sqrt after no warmup otherwise decays from step 1)",
        json_schema_extra=ADDED_LATER,
    )
    min_lr_ratio: float = Field(0.0, ge=0, le=1, description="floor of linear/cosine decay as a fraction of lr")
    grad_clip: float | None = Field(1.0, gt=0, description="clip the global gradient norm to this; null = off")

    @model_validator(mode="after")
    def _betas_need_adam(self) -> OptimConfig:
        if self.optimizer == "sgd" and self.betas != list(ADAM_BETAS):
            raise ValueError(
                f"optim.betas: {self.betas} has no effect on sgd (it uses optim.momentum); "
                "choose optim.optimizer from adam, adamw, radam or leave betas out"
            )
        if self.beta2 is None:
            return self
        if self.optimizer == "sgd":
            raise ValueError(
                f"optim.beta2: {self.beta2} has no effect on sgd (it uses optim.momentum); "
                "choose optim.optimizer from adam, adamw, radam or leave beta2 out"
            )
        if self.betas[1] != ADAM_BETAS[1] and self.betas[1] != self.beta2:
            raise ValueError(
                f"optim.beta2: {self.beta2} and optim.betas: {self.betas} both set beta2; keep one "
                "(betas: [beta1, beta2], or beta2 alone)"
            )
        return self

    @property
    def adam_betas(self) -> tuple[float, float]:
        """(beta1, beta2) as the optimizer gets them: optim.beta2, when set, in place of betas[1]."""
        return (self.betas[0], self.betas[1] if self.beta2 is None else self.beta2)


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


class EvalConfig(Section):
    lengths: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list, description="extra sequence lengths to evaluate at the end (length generalisation)"
    )
    test: bool = Field(True, description="evaluate the test split at the end")
    test_batches: int = Field(8, ge=1, description="batches per final evaluation")


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


class DiagnosticsConfig(Section):
    gradients: bool = Field(
        False,
        description="record gradient through time, per-layer and global gradient "
        "norms and W_hh spectral norms to <run>/diagnostics.json (bench/training/diagnostics.py)",
    )
    every: int = Field(
        100, ge=1, description="record at step 0 and every N optimizer steps; each record costs one extra backward pass"
    )


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


def _current() -> None:
    """Build ``RunConfig``'s schema again (its unions read the registries anew) if an entry was registered
    after it was built: an import path a config names, a notebook's ``@MODELS.register``."""
    if RunConfig.__pydantic_complete__ and any(_built_from.get(r.kind) != r.generation for r in (TASKS, MODELS)):
        RunConfig.model_rebuild(force=True)


def build_config(
    base: dict[str, Any] | list[str] | None = None, overrides: Iterable[str] = (), *, source: str = ""
) -> RunConfig:
    """Validate ``base`` with ``key=value`` overrides applied; UserError on any problem.

    ``build_config(["task=adding", "model=gru"])`` (overrides alone) is the notebook shorthand; it starts
    the registries first (``bench/startup.py``), so a notebook needs no set-up line.
    """
    start()
    if isinstance(base, (list, tuple)):
        base, overrides = {}, [*base, *overrides]
    composed = compose(base, overrides)
    return validate(composed.data, source=source, typed=composed.typed)


def validate(d: dict[str, Any], *, source: str = "", blocks_hint: bool = False, typed: Iterable[str] = ()) -> RunConfig:
    """A RunConfig of a composed dict (``typed``: the keys the user gave); UserError listing every problem.

    ``blocks_hint``: a field only other tasks/models have gets "go under per_model.<name>" (sweeps).
    """
    start()
    for section, name in DEFAULT_NAMES.items():  # `model.d_model=64` alone means the default model
        if isinstance(d.get(section), dict) and "name" not in d[section]:
            d[section] = {"name": name, **d[section]}
    for section, reg in CHOICES.items():  # `model=pkg.module:Class`: import and register it first
        given = d[section].get("name") if isinstance(d.get(section), dict) else None
        if isinstance(given, str) and ":" in given:
            reg.get(given)
    _current()
    try:
        cfg = RunConfig.model_validate(d)
    except ValidationError as e:
        problems = validation_problems(
            e, allowed_fields=section_fields, foreign=lambda loc, key: foreign_at(loc, key, blocks_hint)
        )
        raise UserError(*(f"{source}: {p}" if source else p for p in problems)) from None
    return cfg.with_typed(typed)


def section_fields(loc: tuple) -> list[str] | None:
    """Field names of the config section at ``loc`` (e.g. ('model', 'lstm')), for error messages."""
    cls: Any = RunConfig
    rest = list(loc)
    while rest:
        key = str(rest.pop(0))
        if key in ("task", "model") and cls is RunConfig:
            reg = TASKS if key == "task" else MODELS
            name = str(rest.pop(0)) if rest else None
            if name is None or name not in reg:
                return None
            cls = reg.get(name).config_cls
            continue
        field = getattr(cls, "model_fields", {}).get(key)
        ann = getattr(field, "annotation", None)
        sub = [a for a in getattr(ann, "__args__", (ann,)) if isinstance(a, type) and issubclass(a, Section)]
        if not sub:
            return None
        cls = sub[0]
    return list(cls.model_fields)


def override(cfg: RunConfig, **dotted: Any) -> RunConfig:
    """A new validated config with ``dotted`` keys (``'model.d_model'`` -> value) replaced
    (``model='gru'`` switches the model, keeping the fields a GRU also has)."""
    composed = compose(cfg.to_dict(), dotted)  # a full dump: only the keys replaced here are newly typed
    return validate(composed.data, typed=cfg.typed | set(composed.keys))


def resolve(path: str | Path | None = None, overrides: Iterable[str] = ()) -> tuple[RunConfig, Composed]:
    """The config of ``seqbench run [--config PATH] OVERRIDES``, and how it was composed."""
    overrides = list(overrides)
    composed = compose(load_yaml(path) if path else {}, overrides)
    try:
        return validate(
            composed.data, source=str(path) if path and not overrides else "", typed=composed.typed
        ), composed
    except UserError:
        swept = comma_lists(overrides)
        if swept:  # Hydra's `model=lstm,gru` sweep: say where sweeps are, not "unknown name 'lstm,gru'"
            raise UserError(
                f"{swept[0]}: run trains one configuration; comma lists compare several with "
                f"`seqbench compare {' '.join(swept)} ...` (a list value is written [a, b])"
            ) from None
        raise


def load_config(path: str | Path | None = None, overrides: Iterable[str] = ()) -> RunConfig:
    return resolve(path, overrides)[0]
