"""``seqbench cost``'s settings (``CostConfig``), the complexity table and the exponent fit: no torch, so
``--print-config`` and ``verify``'s light start read them; the measurement is ``bench/training/cost.py``."""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from seqbench.bench import plugins
from seqbench.bench.core.contract import OutputKind
from seqbench.bench.core.cost_format import CostPoint
from seqbench.bench.core.errors import UserError, did_you_mean, format_validation_error, validation_problems
from seqbench.bench.core.registry import MIXERS, MODELS
from seqbench.bench.core.schema import Section
from seqbench.bench.core.settings import leaves, parse_pairs, set_dotted
from seqbench.bench.startup import start
from seqbench.models.configs.base import ModelConfig

VOCAB = 16


def _default_models() -> list[str]:
    """Every measurable model that declares a complexity class (``ModelConfig.complexity``), installed
    plug-ins' included (discovered first, so that the default is the same from the CLI and a notebook)."""
    start()
    return [m for m in _measurable() if m in MODELS.names() and MODELS.get(m).config_cls.complexity is not None]


def _measurable() -> list[str]:
    """Registered models that produce per-step tokens, which is what one cost step trains, and every
    mixer (measured as ``model=stack model.mixer=NAME``)."""
    return [e.name for e in MODELS if OutputKind.TOKENS in e.config_cls.supported_kinds] + [
        e.name for e in MIXERS if e.name not in MODELS.names()
    ]


_KINDS: dict[str, Literal["model", "mixer"]] = {}  # a resolved ``models=`` name -> how it is measured


def kind_of(name: str) -> Literal["model", "mixer"]:
    """How a ``models=`` name is measured, resolved as ``seqbench run`` resolves ``model=`` and
    ``model.mixer=``: a registered model (shipped, or a plug-in's entry point) as itself, a registered mixer
    in the stack; an import path ``pkg.module:Class`` as a model when it names one (a ``ModelConfig``
    declaration, a ``Backbone`` subclass, a class whose ``Config`` subclasses ``ModelConfig``, or one whose
    constructor takes ``cfg`` first), else as a mixer (``Cls(d_model, **mixer_args)``, or its declaration).
    UserError, in run's words, for a broken plug-in, an import path that does not load and an unknown name."""
    if name in _KINDS:
        return _KINDS[name]
    start()  # the shipped registries and installed plug-ins' entry points, as `run` sees them
    kind: Literal["model", "mixer"]
    if name in MODELS.names():
        kind = "model"
    elif name in MIXERS.names():
        kind = "mixer"
    else:
        for reg in (MODELS, MIXERS):
            if (reg.kind, name) in plugins.BROKEN:
                reg.get(name)  # raises the plug-in's reason, as run does
        if ":" not in name:
            ok = _measurable()
            raise UserError(
                f"unknown model {name!r};{did_you_mean(name, ok)} choose from {', '.join(ok)}, or name a "
                "class by import path (pkg.module:Class)"
            )
        kind = "model" if _is_model_class(name) else "mixer"
        (MODELS if kind == "model" else MIXERS).get(name)  # imports and registers it, or raises run's line
    _KINDS[name] = kind
    return kind


def _is_model_class(path: str) -> bool:
    """Whether the class at ``path`` (``pkg.module:Class``) is a model rather than a mixer (see :func:`kind_of`);
    False when it cannot be imported (the mixer registry then says why, in run's words)."""
    module, _, attr = path.partition(":")
    try:
        obj: Any = importlib.import_module(module)
        for part in attr.split("."):
            obj = getattr(obj, part)
    except Exception:  # noqa: BLE001  (the user's module: the registry's import names the failure)
        return False
    if not isinstance(obj, type):
        return False
    if issubclass(obj, ModelConfig):  # a model declared by its config (``seqbench.plugin``)
        return True
    if any(c.__name__ == "Backbone" and c.__module__ == "seqbench.models.base" for c in obj.__mro__):
        return True
    own = getattr(obj, "Config", None)
    if isinstance(own, type) and issubclass(own, ModelConfig):
        return True
    try:
        params = list(inspect.signature(obj.__init__).parameters)[1:2]  # type: ignore[misc]  # as written
    except (TypeError, ValueError):
        return False
    return params in (["cfg"], ["config"])


def is_mixer(name: str) -> bool:
    """Whether a cost ``models=`` name is measured as a mixer in the stack (:func:`kind_of`)."""
    return kind_of(name) == "mixer"


def complexity(model: str) -> tuple[str, int | None]:
    """(the model's or mixer's cost per sequence in words, its exponent in T), or ("?", None) if undeclared."""
    reg = MIXERS if is_mixer(model) else MODELS
    return reg.get(model).config_cls.complexity or ("?", None)


def model_config(model: str, d_model: int, n_layers: int = 1, length: int = 0) -> dict[str, Any]:
    """The ``model`` section one cost point trains: the model (a mixer: the stack around it) at
    ``d_model``, with ``n_layers`` where it stacks layers and a learned encoding long enough for ``length``."""
    m: dict[str, Any] = {"name": "stack", "mixer": model} if is_mixer(model) else {"name": model}
    cls = MODELS.get(m["name"]).config_cls
    m["d_model"] = d_model
    if n_layers != 1:
        m["n_layers"] = n_layers
    if "max_len" in cls.model_fields and length:
        m["max_len"] = max(length, cls.model_fields["max_len"].default or 0)
    return m


class CostConfig(Section):
    models: list[str] = Field(
        default_factory=_default_models,
        min_length=1,
        description="registered per-step models or mixers (a mixer is measured in "
        "the stack) to sweep (default: every model that declares a complexity class)",
    )
    lengths: list[int] = Field(
        default_factory=lambda: [64, 128, 256, 512, 1024],
        min_length=2,
        description="sequence lengths, swept shortest first",
    )
    d_model: int = Field(128, ge=1, description="model width")
    n_layers: int = Field(1, ge=1, description="stacked layers")
    batch_size: int = Field(16, ge=1, description="sequences per step")
    repeats: int = Field(5, ge=1, description="timed steps per point (the median is reported)")
    warmup: int = Field(2, ge=0, description="untimed steps before timing (allocator, kernel selection)")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="cuda when available under auto")
    threads: int = Field(1, ge=1, description="torch intra-op threads (the harness default is 1)")
    isolate: bool = Field(
        True,
        description="CPU: each point in a forked child process, for its peak-RSS "
        "memory and so that an out-of-memory kill cannot end the sweep",
    )
    max_step_s: float = Field(
        10.0, gt=0, description="stop a model's sweep after a length whose median step exceeds this"
    )
    timeout_s: float = Field(
        300.0, gt=0, description="kill an isolated point after this many seconds and stop that model's sweep"
    )
    out_dir: Path = Field(Path("outputs/cost"), description="where cost.csv/md/json and figures go")

    @field_validator("models", "lengths", mode="before")
    @classmethod
    def _comma_list(cls, v: Any) -> Any:
        """``rnn,lstm`` (a YAML string) and a lone ``64`` are lists too."""
        if isinstance(v, str):
            return [x.strip() for x in v.split(",") if x.strip()]
        return [v] if isinstance(v, (int, float)) and not isinstance(v, bool) else v

    @field_validator("models")
    @classmethod
    def _known(cls, v: list[str]) -> list[str]:
        for m in v:
            try:
                kind = kind_of(m)
            except UserError as e:  # pydantic names the field: `models: <run's line>`
                raise ValueError(e.problems[0]) from None
            if kind == "model" and OutputKind.TOKENS not in MODELS.get(m).config_cls.supported_kinds:
                ok = _measurable()
                raise ValueError(
                    f"model {m!r} cannot produce per-step tokens, which one cost step trains; choose from "
                    f"{', '.join(ok)}, or name a class by import path (pkg.module:Class)"
                )
        return v

    @model_validator(mode="after")
    def _models_accept_sizes(self):
        for m in self.models:
            fields = model_config(m, self.d_model, self.n_layers)
            cls = MODELS.get(fields.pop("name")).config_cls
            if self.n_layers != 1 and "n_layers" not in cls.model_fields:
                raise ValueError(
                    f"n_layers: {m} has no n_layers (its fields: {', '.join(cls.model_fields)}); "
                    f"leave n_layers at 1 or leave {m} out of models"
                )
            try:
                cls(**fields)
            except ValidationError as e:
                raise ValueError(f"{m}: {format_validation_error(e)}") from None
        return self

    @field_validator("lengths")
    @classmethod
    def _sorted(cls, v: list[int]) -> list[int]:
        if any(n < 1 for n in v):
            raise ValueError("lengths must be positive")
        return sorted(set(v))


def parse_cost_config(settings: list[str]) -> CostConfig:
    """``seqbench cost`` settings, read like every other ``key=value`` (``bench.core.settings``);
    ``models=rnn,lstm`` and ``lengths=64,128`` may drop the brackets."""
    d: dict[str, Any] = {}
    for key, value in leaves(parse_pairs(settings, example="lengths=64,128,256")).items():
        set_dotted(d, key, value)
    try:
        return CostConfig.model_validate(d)
    except ValidationError as e:
        raise UserError(*validation_problems(e, allowed_fields=lambda loc: list(CostConfig.model_fields))) from None


def point_line(p: CostPoint) -> str:
    """One point as the progress shows it: model, length, then time and memory, or what happened."""
    if p.status == "ok":
        what = f"{p.time_ms or 0.0:9.2f} ms  " + (f"{p.peak_mem_mib:8.1f} MiB" if p.peak_mem_mib is not None else "")
    else:
        what = p.status
    return f"[cost] {p.model:<12} T={p.length:<6} {what}"


def fit_exponent(lengths: Sequence[float], values: Sequence[float]) -> float | None:
    """Least-squares slope of log(value) against log(length); None with fewer than two points."""
    pts = [(math.log(t), math.log(v)) for t, v in zip(lengths, values) if v and v > 0]
    if len(pts) < 2:
        return None
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    den = sum((p[0] - mx) ** 2 for p in pts)
    return sum((p[0] - mx) * (p[1] - my) for p in pts) / den if den else None
