"""Plug-ins: tasks, models and mixers from the user's own package, with no edit of seqbench.

Two ways in, the ones Python packaging and Lightning CLI / Hydra users expect:

- **entry points** in the groups ``seqbench.mixers``, ``seqbench.models`` and ``seqbench.tasks``
  (``[project.entry-points."seqbench.mixers"] retnet = "mypkg.configs:RetNetConfig"``), discovered once
  at start-up (``bench/startup.py``); the entry point's name is the name ``model.mixer=retnet`` takes;
- **an import path** wherever a name is accepted: ``model.mixer=mypkg.layers:MyMixer``,
  ``model=mypkg.models:MyModel``, ``task=mypkg.tasks:MyTask``, in sweep and claim YAML too. The
  path is the registered name (and so what the config records).

Either may name one of two things:

- a **declaration** (``seqbench.plugin``): a config class without torch, subclassing ``MixerConfig``,
  ``ModelConfig`` or ``TaskConfig``, whose ``implementation`` names the class by import path
  (``"mypkg.layers:RetNet"``). It is registered from the config alone; the class is imported, and checked,
  the first time a model (or task) is built (``Entry.cls``), so ``list``, ``--help`` and
  ``--print-config`` never import the plug-in's torch code;
- the **class** itself, imported at once (and torch with it, in every command, ``list`` included).

The contracts, small and written down (``seqbench.testing`` checks them in a plug-in's own CI):

- a **mixer** follows the ``seqbench.plugin.Mixer`` protocol: built as ``Cls(d_model, *, causal,
  **mixer_args)``, called as ``forward(x (B, T, d_model), valid=None) -> (B, T, d_model)``, causal when the
  task is causal (the protocol's docstring says what ``causal`` and ``valid`` mean); a class whose constructor
  lacks ``causal`` or whose forward lacks ``valid`` is adapted once, when it is built
  (``models.stack.plugin_mixer``), so plug-ins written before the protocol still run. Its knobs are its
  declaration's fields; for a class named directly, the fields of a pydantic ``Config`` class attribute, or
  else its constructor's keyword parameters, typed by their annotations (resolved with
  ``typing.get_type_hints``, so string annotations of ``from __future__ import annotations`` type them too;
  one that cannot be resolved, or that pydantic cannot check, leaves its knob untyped and says so in its
  description) and defaulted by their defaults. Optional class attributes: ``forward_macs(d_model, T,
  **mixer_args) -> int`` (a static or class method), ``complexity = ("O(T·d²)", 1)``, ``needs_positions =
  True``;
- a **model** is a ``models.base.Backbone`` subclass (``Cls(cfg, spec, d_in)``, ``d_out``,
  ``forward(x, lengths, state) -> (features, state)``) or a full model (``Cls(cfg, spec)``,
  ``forward(batch, state) -> (output, state)``), with a ``Config`` class attribute subclassing
  ``ModelConfig`` (``seqbench.models.configs.base``) when it has knobs beyond ``d_model``;
- a **task** is a ``tasks.base.Task`` subclass with a ``Config`` class attribute subclassing
  ``TaskConfig`` (``seqbench.tasks.configs.base``).

A plug-in that cannot be used (its import fails, it is not a class, its constructor has the wrong
signature, its Config the wrong base, its declaration names no implementation) is refused with one
line naming it; a broken entry point is reported when its name is used, and ``seqbench list`` shows
it with the reason. A declared class that cannot be used is refused the same way when it is built.
"""

from __future__ import annotations

import importlib
import inspect
import types
import typing
from importlib import metadata
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from seqbench.bench.core.errors import UserError
from seqbench.bench.core.registry import MIXERS, MODELS, TASKS, Entry, Registry, first_line
from seqbench.models.configs.base import ModelConfig
from seqbench.models.configs.mixer import MixerConfig
from seqbench.tasks.configs.base import TaskConfig

GROUPS = {"seqbench.mixers": MIXERS, "seqbench.models": MODELS, "seqbench.tasks": TASKS}
# what a declaration (a config without torch, naming its class by import path) subclasses, per kind
DECLARED: dict[str, type[BaseModel]] = {"mixer": MixerConfig, "model": ModelConfig, "task": TaskConfig}
BROKEN: dict[tuple[str, str], str] = {}  # (kind, entry-point name) -> why it could not be loaded
_discovered = False


def discover() -> None:
    """Make the plug-ins reachable (once per process; ``bench/startup.py`` calls it): every installed entry
    point of the seqbench groups registered, and each registry given ``resolve`` for the names it does not
    hold. One that fails to load is kept in ``BROKEN`` and refused by name when used."""
    global _discovered
    if _discovered:
        return
    _discovered = True
    for reg in GROUPS.values():
        reg.resolver = resolve
    installed = metadata.entry_points()  # one scan of the installed distributions for the three groups
    for group, reg in GROUPS.items():
        for ep in installed.select(group=group):
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
    register(reg, name, _import(reg.kind, name, name), f"import path {name}")
    return reg.get(name)


def _import(kind: str, name: str, path: str) -> object:
    """The object at the import path ``pkg.module:Attr`` (``Attr`` may be dotted), or a one-line
    UserError naming the plug-in ``name`` and what failed."""
    module, _, attr = path.partition(":")
    if not module or not attr:
        raise UserError(f"{kind} {name!r}: an import path is pkg.module:Class, not {path!r}")
    try:
        obj: object = importlib.import_module(module)
    except Exception as e:  # noqa: BLE001  (the user's module: any error is theirs, named in one line)
        raise UserError(f"{kind} {name!r}: cannot import {module}: {_why(e)}") from None
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise UserError(f"{kind} {name!r}: module {module} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj


def register(reg: Registry[Any], name: str, obj: object, origin: str) -> None:
    """Register the plug-in ``obj`` under ``name`` with a config made for that name: a declaration
    (a config class naming its class by import path) with its class left unimported, or the class."""
    if not isinstance(obj, type):
        raise UserError(f"{reg.kind} {name!r}: {origin} is a {type(obj).__name__}, not a class")
    if issubclass(obj, BaseModel):
        _declare(reg, name, obj, origin)
        return
    config = {"mixer": _mixer_config, "model": _model_config, "task": _task_config}[reg.kind](name, obj)
    reg.register(name, config, origin=origin)(obj)


# -- declarations: a config without torch, its class imported when built ---------------------------------


def _declare(reg: Registry[Any], name: str, decl: type[BaseModel], origin: str) -> None:
    """Register the declaration ``decl`` (``seqbench.plugin``) under ``name``; its ``implementation`` is
    imported, and checked against the kind's contract, on the entry's first ``cls``."""
    kind, base = reg.kind, DECLARED[reg.kind]
    if not issubclass(decl, base):
        raise UserError(
            f"{kind} {name!r}: {decl.__qualname__} is a pydantic model but not a {base.__name__}; a declaration "
            f"subclasses seqbench.plugin.{base.__name__}"
        )
    target = getattr(decl, "implementation", None)
    if not isinstance(target, str) or target.count(":") != 1 or not all(target.partition(":")[::2]):
        raise UserError(
            f"{kind} {name!r}: {decl.__qualname__} declares no implementation: "
            'add implementation: ClassVar[str] = "pkg.module:Class" (the class it configures, imported when built)'
        )
    counts = getattr(decl, "forward_macs", None) is not MixerConfig.forward_macs
    said = {}
    if kind == "mixer" and not counts and getattr(decl, "no_flop_count", None) is None:
        said["no_flop_count"] = f"{decl.__qualname__} declares no forward_macs(d_model, T)"
    cfg = _named(name, decl, decl, {}, said, cls_name=decl.__name__)
    reg.declare(name, cfg, lambda: _load(kind, name, target), origin)


def _load(kind: str, name: str, target: str) -> type:
    """A declaration's class: imported from ``target`` and held to the kind's constructor contract."""
    cls = _import(kind, name, target)
    if not isinstance(cls, type):
        raise UserError(f"{kind} {name!r}: implementation {target} is a {type(cls).__name__}, not a class")
    if kind == "mixer":
        _check_init(name, kind, cls, 1, "Cls(d_model, **mixer_args)")
    elif kind == "model":
        _check_init(name, kind, cls, 2, "Cls(cfg, spec, d_in) (a Backbone) or Cls(cfg, spec)")
    return cls


# -- classes named directly: a config made from the class -----------------------------------------------


def _named(
    name: str,
    base: type[BaseModel],
    obj: type,
    fields: dict[str, Any],
    attrs: dict[str, Any] | None = None,
    cls_name: str | None = None,
) -> type[BaseModel]:
    """``base`` subclassed, in the plug-in's module, with ``name: Literal[name] = name`` (the registries'
    discriminator), ``fields``, the class attributes ``attrs`` and the plug-in's docstring (what ``seqbench
    list`` shows): the class its author would have written, made in one step."""
    # a Literal of a name known only at run time is no type a checker can read
    literal: Any = Literal[name]  # pydantic reads it at run time; create_model's stub asks for a static type
    return create_model(
        cls_name or f"{obj.__name__}Config",
        __base__=base,
        __module__=obj.__module__,
        __doc__=first_line(obj) or f"{obj.__module__}.{obj.__qualname__} (plug-in)",
        __namespace__=attrs,
        name=(literal, name),
        **fields,
    )


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
    attrs: dict[str, Any] = {
        "complexity": getattr(obj, "complexity", None),
        "needs_positions": bool(getattr(obj, "needs_positions", False)),
    }
    counter = getattr(obj, "forward_macs", None)
    if callable(counter):

        def forward_macs(self: MixerConfig, d_model: int, T: int) -> int | None:
            """The class's own count, given the knobs this config holds."""
            return counter(d_model, T, **self.args())

        attrs["forward_macs"] = forward_macs
    else:
        attrs["no_flop_count"] = f"{obj.__qualname__} declares no forward_macs(d_model, T, **mixer_args)"
    return _named(name, MixerConfig, obj, fields, attrs)


def _signature_fields(obj: type) -> dict[str, Any]:
    """The constructor's keyword parameters after ``d_model`` (``causal`` is the stack's) as pydantic
    fields: the resolved annotation is the type (``from __future__ import annotations`` writes them as
    strings), the default the default. A parameter without an annotation takes any value; one whose
    annotation cannot be resolved or checked does too, and its description says why."""
    fields: dict[str, Any] = {}
    init = obj.__init__  # type: ignore[misc]  # the plug-in class's own constructor, as written
    params = list(inspect.signature(init).parameters.values())[2:]
    hints = _hints(init, [p for p in params if p.annotation is not p.empty])
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "causal":
            continue
        default = ... if p.default is p.empty else p.default
        hint = hints.get(p.name, Any)
        if isinstance(hint, str):  # the reason it could not be used
            fields[p.name] = (Any, Field(default, description=f"untyped, any value accepted: {hint}"))
        else:
            fields[p.name] = (hint, default)
    return fields


def _hints(fn: Any, params: list[inspect.Parameter]) -> dict[str, Any]:
    """``params``' annotations resolved (``typing.get_type_hints``, ``Annotated`` kept), one by one
    where the whole set does not resolve; a parameter whose annotation cannot be resolved, or names a
    type pydantic cannot validate, maps to the reason (a string)."""
    from pydantic import TypeAdapter  # here: only a plug-in class named directly needs it

    try:
        resolved = typing.get_type_hints(fn, include_extras=True)
    except Exception:  # noqa: BLE001  (one unresolvable hint (NameError, a typo): resolve the others alone)
        resolved = {}
    globalns = getattr(inspect.unwrap(fn), "__globals__", {})
    out: dict[str, Any] = {}
    for p in params:
        hint = resolved.get(p.name, p.annotation)
        if isinstance(hint, str):
            one = types.SimpleNamespace(__annotations__={p.name: hint}, __globals__=globalns)
            try:  # get_type_hints reads any object's __annotations__ in the namespace of its __globals__
                hint = typing.get_type_hints(one, include_extras=True)[p.name]
            except Exception as e:  # noqa: BLE001  (the plug-in's annotation: any error names it)
                out[p.name] = f"its type hint {p.annotation!r} cannot be resolved ({_why(e)})"
                continue
        try:
            TypeAdapter(hint)  # a type pydantic cannot validate (a tensor, a module) checks nothing
        except Exception as e:  # noqa: BLE001  (pydantic's schema errors have several classes)
            out[p.name] = f"its type hint {p.annotation!r} cannot be validated ({type(e).__name__})"
            continue
        out[p.name] = hint
    return out


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
