"""Plug-ins: tasks, models and mixers from the user's own package, with no edit of seqbench.

Two ways in, the ones Python packaging and Lightning CLI / Hydra users expect:

- **entry points** in the groups ``seqbench.mixers``, ``seqbench.models`` and ``seqbench.tasks``
  (``[project.entry-points."seqbench.mixers"] retnet = "mypkg.layers:RetNet"``), discovered once
  at start-up; the entry point's name is the name ``model.mixer=retnet`` takes;
- **an import path** wherever a name is accepted: ``model.mixer=mypkg.layers:MyMixer``,
  ``model=mypkg.models:MyModel``, ``task=mypkg.tasks:MyTask``, in sweep and claim YAML too. The
  path is the registered name (and so what the config records).

The contracts, small and written down (``seqbench.testing`` checks them in a plug-in's own CI):

- a **mixer** is a class built as ``Cls(d_model, **mixer_args)`` (plus ``causal=`` when its
  constructor takes it) with ``forward(x (B, T, d_model)) -> (B, T, d_model)``, causal when the task
  is causal. Its knobs are its constructor's keyword parameters (typed by their annotations,
  defaulted by their defaults), or the fields of a pydantic ``Config`` class attribute. Optional
  class attributes: ``forward_macs(d_model, T, **mixer_args) -> int`` (a static or class method),
  ``complexity = ("O(T·d²)", 1)``, ``needs_positions = True``;
- a **model** is a ``models.base.Backbone`` subclass (``Cls(cfg, spec, d_in)``, ``d_out``,
  ``forward(x, lengths, state) -> (features, state)``) or a full model (``Cls(cfg, spec)``,
  ``forward(batch, state) -> (output, state)``), with a ``Config`` class attribute subclassing
  ``ModelConfig`` (``seqbench.models.configs.base``) when it has knobs beyond ``d_model``;
- a **task** is a ``tasks.base.Task`` subclass with a ``Config`` class attribute subclassing
  ``TaskConfig`` (``seqbench.tasks.configs.base``).

A plug-in that cannot be used (its import fails, it is not a class, its constructor has the wrong
signature, its Config the wrong base) is refused with one line naming it; a broken entry point is
reported when its name is used, and ``seqbench list`` shows it with the reason.
"""

from __future__ import annotations

import importlib
import inspect
from importlib import metadata
from typing import Any, Literal

from pydantic import BaseModel, create_model

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS, MODELS, TASKS, Entry, Registry, first_line
from seqbench.models.configs.base import ModelConfig
from seqbench.models.configs.mixer import MixerConfig
from seqbench.tasks.configs.base import TaskConfig

GROUPS = {"seqbench.mixers": MIXERS, "seqbench.models": MODELS, "seqbench.tasks": TASKS}
BROKEN: dict[tuple[str, str], str] = {}  # (kind, entry-point name) -> why it could not be loaded
_discovered = False


def discover() -> None:
    """Register every installed entry point of the seqbench groups (once per process). One that
    fails to load is kept in ``BROKEN`` and refused by name when used."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for group, reg in GROUPS.items():
        for ep in metadata.entry_points(group=group):
            if ep.name in reg:
                continue
            where = f"entry point {ep.name} = {ep.value}" + (f" of {ep.dist.name}" if ep.dist else "")
            try:
                register(reg, ep.name, ep.load(), where)
            except Exception as e:  # noqa: BLE001  (a broken plug-in must not stop seqbench)
                BROKEN[(reg.kind, ep.name)] = f"{where}: {_why(e)}"


def _why(e: BaseException) -> str:
    text = e.problems[0] if isinstance(e, UserError) else f"{type(e).__name__}: {e}"
    return " ".join(str(text).split())


def resolve(reg: Registry[Any], name: str) -> Entry[Any] | None:
    """The registry's hook for names it does not hold: a broken entry point is refused with its
    reason; ``pkg.module:Class`` is imported and registered under that path."""
    if (reg.kind, name) in BROKEN:
        raise UserError(f"{reg.kind} {name!r}: the plug-in could not be loaded ({BROKEN[(reg.kind, name)]})")
    if ":" not in name:
        return None
    module, _, attr = name.partition(":")
    if not module or not attr:
        raise UserError(f"{reg.kind} {name!r}: an import path is pkg.module:Class")
    try:
        obj = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001  (the user's module: any error is theirs, named in one line)
        raise UserError(f"{reg.kind} {name!r}: cannot import {module}: {_why(e)}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UserError(f"{reg.kind} {name!r}: module {module} has no attribute {attr!r}")
        obj = getattr(obj, part)
    register(reg, name, obj, f"import path {name}")
    return reg.get(name)


def register(reg: Registry[Any], name: str, obj: object, origin: str) -> None:
    """Register the plug-in class ``obj`` under ``name`` with a config made for that name."""
    if not isinstance(obj, type):
        raise UserError(f"{reg.kind} {name!r}: {origin} is a {type(obj).__name__}, not a class")
    config = {"mixer": _mixer_config, "model": _model_config, "task": _task_config}[reg.kind](name, obj)
    reg.register(name, config, origin=origin)(obj)


def _named(name: str, base: type[BaseModel], obj: type, fields: dict[str, Any]) -> type[BaseModel]:
    """``base`` subclassed with ``name: Literal[name] = name`` (the registries' discriminator) and
    ``fields``, in the plug-in's module, with its docstring (what ``seqbench list`` shows)."""
    # a Literal of a name known only at run time is no type a checker can read
    literal: Any = Literal[name]  # pydantic reads it at run time; create_model's stub asks for a static type
    cfg = create_model(
        f"{obj.__name__}Config", __base__=base, __module__=obj.__module__, name=(literal, name), **fields
    )
    cfg.__doc__ = first_line(obj) or f"{obj.__module__}.{obj.__qualname__} (plug-in)"
    return cfg


def _model_config(name: str, obj: type) -> type[BaseModel]:
    base = getattr(obj, "Config", ModelConfig)
    if not (isinstance(base, type) and issubclass(base, ModelConfig)):
        raise UserError(
            f"model {name!r}: {obj.__qualname__}.Config must subclass "
            "seqbench.models.configs.base.ModelConfig (it holds d_model and the interface)"
        )
    _check_init(name, "model", obj, 2, "Cls(cfg, spec, d_in) (a Backbone) or Cls(cfg, spec)")
    return _named(name, base, obj, {})


def _task_config(name: str, obj: type) -> type[BaseModel]:
    base = getattr(obj, "Config", None)
    if not (isinstance(base, type) and issubclass(base, TaskConfig)):
        raise UserError(
            f"task {name!r}: {obj.__qualname__} needs a Config class attribute subclassing "
            "seqbench.tasks.configs.base.TaskConfig (it declares the task's facts)"
        )
    return _named(name, base, obj, {})


def _mixer_config(name: str, obj: type) -> type[BaseModel]:
    _check_init(name, "mixer", obj, 1, "Cls(d_model, **mixer_args)")
    own = getattr(obj, "Config", None)
    if own is not None and not (isinstance(own, type) and issubclass(own, BaseModel)):
        raise UserError(f"mixer {name!r}: {obj.__qualname__}.Config must be a pydantic model")
    fields = (
        {k: (f.annotation, f) for k, f in own.model_fields.items() if k != "name"}
        if own is not None
        else _signature_fields(obj)
    )
    cfg = _named(name, MixerConfig, obj, fields)
    cfg.complexity = getattr(obj, "complexity", None)  # type: ignore[attr-defined]
    cfg.needs_positions = bool(getattr(obj, "needs_positions", False))  # type: ignore[attr-defined]
    counter = getattr(obj, "forward_macs", None)
    if callable(counter):
        cfg.forward_macs = lambda self, d_model, T: counter(d_model, T, **self.args())  # type: ignore[attr-defined]
    else:
        cfg.no_flop_count = f"{obj.__qualname__} declares no forward_macs(d_model, T, **mixer_args)"  # type: ignore[attr-defined]
    return cfg


def _signature_fields(obj: type) -> dict[str, Any]:
    """The constructor's keyword parameters after ``d_model`` (``causal`` is the stack's) as pydantic
    fields: the annotation is the type (Any where there is none), the default the default."""
    fields: dict[str, Any] = {}
    init = obj.__init__  # type: ignore[misc]  # the plug-in class's own constructor, as written
    for p in list(inspect.signature(init).parameters.values())[2:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "causal":
            continue
        ann = Any if p.annotation is p.empty or isinstance(p.annotation, str) else p.annotation
        fields[p.name] = (ann, ... if p.default is p.empty else p.default)
    return fields


def _check_init(name: str, kind: str, obj: type, positional: int, contract: str) -> None:
    """The constructor takes at least ``positional`` positional arguments after ``self``."""
    try:
        params = list(inspect.signature(obj.__init__).parameters.values())[1:]  # type: ignore[misc]  # as written
    except (TypeError, ValueError):
        return  # a builtin signature: the build says what is wrong
    slots = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if len(slots) < positional and not any(p.kind is p.VAR_POSITIONAL for p in params):
        got = ", ".join(p.name for p in params) or "no arguments"
        raise UserError(f"{kind} {name!r}: {obj.__qualname__}.__init__ takes {got}; the {kind} contract is {contract}")


for _reg in GROUPS.values():
    _reg.resolver = resolve
