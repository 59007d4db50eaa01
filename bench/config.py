"""RunConfig: one typed, frozen, validated tree per run.

``task`` and ``model`` are discriminated unions on ``name`` built from the registries,
so a task or model registered in ``tasks/`` or ``models/`` is configurable the day it
lands. Configs come from YAML and/or dotted ``key=value`` overrides; every change
rebuilds and re-validates the whole tree.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Iterable, Literal, Union

import yaml
from pydantic import Field, ValidationError, model_validator

import seqbench.models  # noqa: F401  (fills MODELS)
import seqbench.tasks  # noqa: F401  (fills TASKS)
from seqbench.bench.core.errors import UserError, format_validation_error
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.core.schema import Section
from seqbench.bench.core.settings import leaves, load_yaml, parse_settings, parse_value, safe_load, set_dotted

__all__ = ["RunConfig", "build_config", "compose", "load_config", "load_yaml", "override", "parse_value",
           "safe_load", "validate"]


def _union(configs: list[type]) -> Any:
    if len(configs) == 1:
        return configs[0]
    return Annotated[Union[tuple(configs)], Field(discriminator="name")]


TaskUnion = _union(TASKS.configs())
ModelUnion = _union(MODELS.configs())


class OptimConfig(Section):
    optimizer: Literal["adam", "adamw", "sgd", "radam"] = Field("adam", description="optimizer family")
    lr: float = Field(1e-3, gt=0, description="peak learning rate (after warmup)")
    weight_decay: float = Field(0.0, ge=0, description="L2 (adam/sgd/radam) or decoupled (adamw) decay")
    momentum: float = Field(0.9, ge=0, lt=1, description="sgd momentum")
    # a list (not a tuple) so Section's bool guard sees its items: `optim.betas=[false, 0.98]` is refused
    betas: list[Annotated[float, Field(ge=0, lt=1)]] = Field(
        default_factory=lambda: [0.9, 0.999], min_length=2, max_length=2,
        description="adam/adamw/radam (beta1, beta2), each in [0, 1); Vaswani et al. and Xiong et al. use "
        "[0.9, 0.98]; sgd refuses them (it has optim.momentum)")
    warmup_steps: int = Field(0, ge=0, description="linear warmup from 0 to lr over these steps")
    schedule: Literal["constant", "linear", "cosine", "inverse_sqrt"] = Field(
        "constant", description="shape after warmup")
    min_lr_ratio: float = Field(0.0, ge=0, le=1, description="floor of linear/cosine decay as a fraction of lr")
    grad_clip: float | None = Field(1.0, gt=0, description="clip the global gradient norm to this; null = off")

    @model_validator(mode="after")
    def _betas_need_adam(self) -> "OptimConfig":
        if self.optimizer == "sgd" and self.betas != [0.9, 0.999]:
            raise ValueError(f"optim.betas: {self.betas} has no effect on sgd (it uses optim.momentum); "
                             "choose optim.optimizer from adam, adamw, radam or leave betas out")
        return self


class EarlyStopConfig(Section):
    metric: str = Field("val/acc", description="validation metric to watch, e.g. val/acc")
    threshold: float = Field(description="stop once the metric reaches this (>= for max-metrics, <= for min)")


class TrainConfig(Section):
    max_steps: int = Field(1000, ge=1, description="optimizer steps")
    batch_size: int = Field(64, ge=1, description="sequences per step (per device)")
    val_every: int = Field(100, ge=1, description="validate every N steps (and at the last step)")
    val_batches: int = Field(4, ge=1, description="batches per validation")
    precision: Literal["32-true", "16-mixed", "bf16-mixed", "bf16-true", "64-true"] = Field(
        "32-true", description="Lightning precision; bf16-mixed for autocast on GPU")
    accelerator: Literal["auto", "cpu", "gpu", "cuda", "mps"] = Field("auto", description="Lightning accelerator")
    devices: int | Literal["auto"] = Field(1, description="devices per node (Lightning)")
    strategy: str = Field("auto", description="Lightning strategy, e.g. ddp_spawn")
    num_nodes: int = Field(1, ge=1, description="nodes for multi-node DDP")
    deterministic: bool = Field(False, description="torch deterministic algorithms (slower on GPU)")
    threads: int | None = Field(1, ge=1, description="torch intra-op threads per process; small RNNs are "
                                "2.7-12x faster with 1 than 2 on a busy 2-core machine; null = torch default")
    flush_denormal: bool = Field(True, description="flush denormal floats to zero on CPU; long LSTM backward "
                                 "chains were ~6x slower with denormals")
    compile: bool = Field(False, description="torch.compile the model (falls back to eager on failure)")
    early_stop: EarlyStopConfig | None = Field(None, description="stop when a val metric crosses a threshold")
    diverge_loss: float | None = Field(None, gt=0, description="training loss above this marks the run diverged "
                                       "(NaN/Inf always does)")
    checkpoint_every: int | None = Field(200, ge=1, description="save <run>/checkpoints/last.ckpt every N steps "
                                         "(atomic) so `resume=true` can continue; null = never")


class EvalConfig(Section):
    lengths: list[Annotated[int, Field(ge=1)]] = Field(
        default_factory=list, description="extra sequence lengths to evaluate at the end (length generalisation)")
    test: bool = Field(True, description="evaluate the test split at the end")
    test_batches: int = Field(8, ge=1, description="batches per final evaluation")


class TrackingConfig(Section):
    wandb: Literal["off", "offline", "online"] = Field(
        "offline", description="W&B mode; offline writes under out_dir/wandb for `wandb sync`")
    project: str = Field("seqbench", min_length=1, description="W&B project")
    group: str | None = Field(None, description="W&B group (sweeps use the study name)")
    tags: list[str] = Field(default_factory=list, description="W&B tags")


class DiagnosticsConfig(Section):
    gradients: bool = Field(False, description="record gradient through time, per-layer and global gradient "
                            "norms and W_hh spectral norms to <run>/diagnostics.json (bench/training/diagnostics.py)")
    every: int = Field(100, ge=1, description="record at step 0 and every N optimizer steps; each record costs "
                       "one extra backward pass")


def _default_task():
    return TASKS.get("copy").config_cls()


def _default_model():
    return MODELS.get("lstm").config_cls()


class RunConfig(Section):
    task: TaskUnion = Field(default_factory=_default_task, description="what to learn")  # type: ignore[valid-type]
    model: ModelUnion = Field(default_factory=_default_model, description="architecture")  # type: ignore[valid-type]
    optim: OptimConfig = Field(default_factory=OptimConfig)
    train: TrainConfig = Field(default_factory=TrainConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    tracking: TrackingConfig = Field(default_factory=TrackingConfig)
    diagnostics: DiagnosticsConfig = Field(default_factory=DiagnosticsConfig)
    seed: int = Field(0, ge=0, description="seeds weights, data streams and dropout")
    out_dir: Path = Field(Path("outputs"), description="root for runs/, wandb/, reports/")
    run_id: str | None = Field(None, pattern=r"^[A-Za-z0-9._-]+$", description="run folder name; default derived")
    resume: bool = Field(False, description="continue the newest unfinished run with the same config (or run_id) "
                         "from its last checkpoint; a finished one is returned as is")

    @model_validator(mode="after")
    def _cross_field(self) -> "RunConfig":
        t, m = self.task, self.model
        kind = t.facts.output_kind
        if kind not in m.supported_kinds:
            ok = [e.name for e in MODELS if kind in e.config_cls.supported_kinds]
            raise ValueError(f"model.name: {m.name!r} cannot produce the {kind.value} output task "
                             f"{t.name!r} needs; choose from {', '.join(ok)}")
        if t.facts.causal and m.sees_future():
            raise ValueError(f"model.bidirectional: a bidirectional model sees the future but task {t.name!r} "
                             "is causal; set model.bidirectional=false")
        if self.optim.warmup_steps and self.optim.warmup_steps >= self.train.max_steps:
            raise ValueError(f"optim.warmup_steps: {self.optim.warmup_steps} >= train.max_steps="
                             f"{self.train.max_steps}; the run would never reach the peak lr")
        if self.diagnostics.gradients and self.train.compile:
            raise ValueError("diagnostics.gradients: the gradient-through-time probe needs a second backward "
                             "through the eager graph, which compiled graphs refuse; set train.compile=false")
        es = self.train.early_stop
        if es is not None:
            allowed = t.facts.keys("val")
            if es.metric not in allowed:
                raise ValueError(f"train.early_stop.metric: {es.metric!r} is not reported by task {t.name!r}; "
                                 f"choose from {', '.join(allowed)}")
        return self

    # -- identity -------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return self.model_dump(mode="json")

    def config_hash(self) -> str:
        """Hash of everything that changes the experiment (not where or how it is logged)."""
        d = self.to_dict()
        for k in ("out_dir", "run_id", "tracking", "resume", "diagnostics"):  # diagnostics only observe
            d.pop(k)
        for k in ("threads", "checkpoint_every", "flush_denormal"):
            d["train"].pop(k)
        return hashlib.sha256(json.dumps(d, sort_keys=True).encode()).hexdigest()[:12]

    def to_yaml(self) -> str:
        return yaml.safe_dump(self.to_dict(), sort_keys=False)


# -- building configs ------------------------------------------------------------------

CHOICES = {"task": TASKS, "model": MODELS}  # sections chosen by name, before any value is set


@dataclass(frozen=True)
class Composed:
    """A RunConfig dict before validation; the base fields a task/model switch left out, and
    the keys given more than once (the last value counts)."""

    data: dict[str, Any]
    dropped: list[str]
    repeated: list[str]
    keys: list[str]  # the dotted leaf keys the overrides set (``model.name`` for ``model=``)


def compose(base: dict[str, Any] | None = None, overrides: Iterable[str] = ()) -> Composed:
    """``base`` (a --config file, a sweep's base) with ``key=value`` overrides, in any order.

    Like Hydra, choices come before values: ``task=``/``model=`` (or ``task.name=``) is applied
    first, then every value, so ``model.d_model=32 model=gru`` is a GRU with d_model 32. When a
    choice switches the base's task or model, the base keeps the fields the new one also has
    and drops the others (listed in ``dropped``: a config.yaml of an LSTM run holds
    ``forget_bias``, which a GRU has not). A value typed in ``overrides`` is never dropped: one
    the chosen task/model lacks fails validation naming it.
    """
    d = json.loads(json.dumps(base or {}, default=str))  # deep copy, plain types
    for sec in CHOICES:  # `task: copy` is short for `task: {name: copy}`
        if isinstance(d.get(sec), str):
            d[sec] = {"name": d[sec]}
    repeated: list[str] = []
    return _apply(d, setting_leaves(parse_settings(overrides), repeated), repeated)


def setting_leaves(pairs: Iterable[tuple[str, Any]], repeated: list[str] | None = None) -> dict[str, Any]:
    """Settings as disjoint dotted leaves; ``model=gru`` is ``model.name=gru``."""
    return leaves(((f"{k}.name" if k in CHOICES and not isinstance(v, dict) else k, v) for k, v in pairs),
                  repeated)


def _apply(d: dict[str, Any], values: dict[str, Any], repeated: list[str] | None = None) -> Composed:
    keys, values = list(values), dict(values)
    dropped: list[str] = []
    for sec, reg in CHOICES.items():  # choices first
        if f"{sec}.name" in values:
            dropped += _switch(d, sec, values.pop(f"{sec}.name"), reg)
    for key, value in values.items():  # leaves are disjoint: their order cannot matter
        set_dotted(d, key, value)
    return Composed(d, dropped, repeated or [], keys)


def _switch(d: dict[str, Any], sec: str, name: Any, reg: Any) -> list[str]:
    """Choose ``name`` for section ``sec`` of ``d``; returns the base fields it drops."""
    old = d.get(sec) if isinstance(d.get(sec), dict) else {}
    if old.get("name", _DEFAULT_NAMES[sec]) == name:
        d[sec] = {**old, "name": name}
        return []
    fields = reg.get(name).config_cls.model_fields if isinstance(name, str) and name in reg else None
    keep = {k: v for k, v in old.items() if k != "name" and (fields is None or k in fields)}
    d[sec] = {"name": name, **keep}
    return [f"{sec}.{k}" for k in old if k != "name" and k not in keep]


def build_config(base: dict[str, Any] | list[str] | None = None, overrides: Iterable[str] = (),
                 *, source: str = "") -> RunConfig:
    """Validate ``base`` with ``key=value`` overrides applied; UserError on any problem.

    ``build_config(["task=adding", "model=gru"])`` (overrides alone) is the notebook shorthand.
    """
    if isinstance(base, (list, tuple)):
        base, overrides = {}, [*base, *overrides]
    return validate(compose(base, overrides).data, source=source)


_DEFAULT_NAMES = {"task": "copy", "model": "lstm"}


def validate(d: dict[str, Any], *, source: str = "") -> RunConfig:
    for section, name in _DEFAULT_NAMES.items():  # `model.d_model=64` alone means the default model
        if isinstance(d.get(section), dict) and "name" not in d[section]:
            d[section] = {"name": name, **d[section]}
    try:
        return RunConfig.model_validate(d)
    except ValidationError as e:
        msg = format_validation_error(e, allowed_fields=lambda loc: section_fields(loc))
        raise UserError(f"{source}: {msg}" if source else msg) from None


def section_fields(loc: tuple) -> list[str] | None:
    """Field names of the config section at ``loc`` (e.g. ('model', 'lstm')), for error messages."""
    cls: Any = RunConfig
    loc = list(loc)
    while loc:
        key = str(loc.pop(0))
        if key in ("task", "model") and cls is RunConfig:
            reg = TASKS if key == "task" else MODELS
            name = str(loc.pop(0)) if loc else None
            if name not in reg:
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
    return validate(_apply(cfg.to_dict(), setting_leaves(dotted.items())).data)


def resolve(path: str | Path | None = None, overrides: Iterable[str] = ()) -> tuple[RunConfig, Composed]:
    """The config of ``seqbench run [--config PATH] OVERRIDES``, and how it was composed."""
    overrides = list(overrides)
    composed = compose(load_yaml(path) if path else {}, overrides)
    return validate(composed.data, source=str(path) if path and not overrides else ""), composed


def notes(composed: Composed, source: str | None) -> list[str]:
    """What the user should hear about the composition: repeated keys, file fields left out."""
    out = [f"note: {k} is given more than once; the last value counts" for k in dict.fromkeys(composed.repeated)]
    if composed.dropped:
        sections = "/".join(sorted({k.split(".")[0] for k in composed.dropped}))
        out.append(f"note: {source or 'the base config'} sets {', '.join(composed.dropped)}, which the chosen "
                   f"{sections} has not; left out")
    return out


def load_config(path: str | Path | None = None, overrides: Iterable[str] = ()) -> RunConfig:
    return resolve(path, overrides)[0]
