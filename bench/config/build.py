"""The config floor's build API: a ``RunConfig`` from a dict, a YAML file and/or dotted ``key=value``
overrides (``build_config``, ``load_config``, ``resolve``, ``override``, ``validate``, with ``section_fields``
for its refusals), and a metric's goal (``metric_goal_of``). Each entry starts the registries first
(``bench/startup.py``); every change rebuilds and re-validates the whole tree. The composition into one
dict is ``bench/composition.py``'s.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seqbench.bench.composition import CHOICES, DEFAULT_NAMES, Composed, compose, foreign_at
from seqbench.bench.config.run import RunConfig, refresh_unions
from seqbench.bench.core.errors import UserError, validation_problems
from seqbench.bench.core.registry import MODELS, TASKS
from seqbench.bench.core.schema import Section
from seqbench.bench.core.settings import comma_lists, load_yaml
from seqbench.bench.startup import start
from seqbench.tasks.configs import base as task_configs


def metric_goal_of(metric: str, tasks: list[str]) -> str:
    """``"maximize"`` or ``"minimize"`` for a metric key, as the runs' tasks declare it (a plug-in task's
    too: the registries are started first). ``tasks/configs/base.py``'s, for callers of the config floor."""
    start()
    return task_configs.metric_goal_of(metric, tasks)


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
    refresh_unions()
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
