"""Composition: a base, ``key=value`` settings and per-task/per-model blocks -> one RunConfig dict,
before validation (``bench/config/build.py`` validates it into a ``RunConfig``).

Choices come before values, as in Hydra: ``task=``/``model=`` switch the section first (keeping the
fields the new task or model also has), then every value is set as a dotted leaf, so the settings
form a set and their order does not matter. ``Composed`` records what the user typed, what a switch
dropped and which keys came twice, for the notes ``run`` prints and the refusals a sweep makes;
``foreign_field`` says which other tasks or models own a field the chosen one lacks. ``bench.config``
re-exports these names; it and this module are the config floor of the import-linter contract (no torch).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from seqbench.bench.core.registry import MODELS, TASKS, Registry
from seqbench.bench.core.settings import leaves, parse_pairs, set_dotted
from seqbench.bench.startup import start

DEFAULT_NAMES = {"task": "copy", "model": "lstm"}  # the task and model a config gets when it names none
CHOICES: dict[str, Registry[Any]] = {"task": TASKS, "model": MODELS}  # sections chosen by name, before any value
_CHOICE_KEYS = ("task.name", "model.name")
Blocks = Mapping[str, Mapping[str, Any]]  # per_model / per_task: name -> {dotted key: value}


@dataclass(frozen=True)
class Composed:
    """A RunConfig dict before validation; the base fields a task/model switch left out, and
    the keys given more than once (the last value counts)."""

    data: dict[str, Any]
    dropped: list[str]
    repeated: list[str]
    keys: list[str]  # the dotted leaf keys the overrides set (``model.name`` for ``model=``)
    typed: list[str]  # every key given: the base's leaves (a file, a spec), the overrides, the blocks


def compose(
    base: Mapping[str, Any] | None = None,
    overrides: Iterable[str] | Mapping[str, Any] = (),
    *,
    per_model: Blocks | None = None,
    per_task: Blocks | None = None,
) -> Composed:
    """The one composition behind ``run``, ``sweep`` (its base and every trial), ``compare`` and
    claims: ``base`` (a --config file, a sweep's base), then ``overrides`` (``key=value`` words or
    a ``{dotted key: value}`` mapping, in any order), then the chosen model's and task's blocks.

    Like Hydra, choices come before values: ``task=``/``model=`` (or ``task.name=``) is applied
    first, then every value, so ``model.d_model=32 model=gru`` is a GRU with d_model 32. When a
    choice switches the base's task or model, the base keeps the fields the new one also has
    and drops the ones only other tasks/models have (listed in ``dropped``: a config.yaml of an
    LSTM run holds ``forget_bias``, which a GRU has not; ``run`` notes them, a sweep refuses them).
    A key no task/model has stays, so validation calls it unknown. A value typed in ``overrides``
    is never dropped: one the chosen task/model lacks fails validation naming it. Last,
    ``per_task[task]`` and ``per_model[model]`` (the model's win on a shared key) merge as
    leaves: ``train: {early_stop: ...}`` in a block sets those leaves, not the whole section.

    The registries are started first (``bench/startup.py``): a plug-in's name switches a section as a
    shipped one does.
    """
    start()
    d = json.loads(json.dumps(base or {}, default=str))  # deep copy, plain types
    for sec in CHOICES:  # `task: copy` is short for `task: {name: copy}`
        if isinstance(d.get(sec), str):
            d[sec] = {"name": d[sec]}
    repeated: list[str] = []
    pairs = overrides.items() if isinstance(overrides, Mapping) else parse_pairs(overrides)
    values = setting_leaves(pairs, repeated)
    keys, dropped = list(values), []
    typed = [*leaves(d.items()), *keys]
    for key in [k for k in values if k in _CHOICE_KEYS]:  # choices first; each is its own section's
        sec = key.split(".")[0]
        dropped += _switch(d, sec, values.pop(key), CHOICES[sec])
    for key, value in values.items():  # leaves are disjoint: their order cannot matter
        set_dotted(d, key, value)
    if per_model or per_task:
        task, model = chosen(d, "task"), chosen(d, "model")  # not text: no block (validation names it)
        block = {
            **((per_task or {}).get(task, {}) if isinstance(task, str) else {}),
            **((per_model or {}).get(model, {}) if isinstance(model, str) else {}),
        }  # the model's win
        for key, value in leaves(block.items()).items():
            set_dotted(d, key, value)
            typed.append(key)
    return Composed(d, dropped, repeated, keys, typed)


def chosen(d: Mapping[str, Any], section: str) -> Any:
    """The task/model name a config dict chooses (the default when it names none)."""
    node = d.get(section)
    return node.get("name", DEFAULT_NAMES[section]) if isinstance(node, dict) else DEFAULT_NAMES[section]


def setting_leaves(pairs: Iterable[tuple[str, Any]], repeated: list[str] | None = None) -> dict[str, Any]:
    """Settings as disjoint dotted leaves; ``model=gru`` is ``model.name=gru``."""
    return leaves(((f"{k}.name" if k in CHOICES and not isinstance(v, dict) else k, v) for k, v in pairs), repeated)


def _switch(d: dict[str, Any], sec: str, name: object, reg: Registry[Any]) -> list[str]:
    """Choose ``name`` for section ``sec`` of ``d``; returns the base fields it drops."""
    node = d.get(sec)
    old: dict[str, Any] = node if isinstance(node, dict) else {}
    if old.get("name", DEFAULT_NAMES[sec]) == name or not isinstance(name, str) or name not in reg:
        d[sec] = {**old, "name": name}  # an unknown name keeps everything: validation names the name
        return []
    own = reg.get(name).config_cls.model_fields
    others = {f for e in reg for f in e.config_cls.model_fields}
    gone = [k for k in old if k != "name" and k not in own and k in others]
    d[sec] = {"name": name, **{k: v for k, v in old.items() if k != "name" and k not in gone}}
    return [f"{sec}.{k}" for k in gone]


def foreign_field(section: str, name: str, field: str, blocks_hint: bool = False) -> str | None:
    """`` for model rnn (lstm has it)`` when other entries than ``name`` have ``field``, else None."""
    reg = CHOICES[section]
    owners = [e.name for e in reg if e.name != name and field in e.config_cls.model_fields]
    if not owners:
        return None
    who = ", ".join(owners[:4]) + (", ..." if len(owners) > 4 else "")
    hint = f"; fields only some {section}s have go under per_{section}.<name>" if blocks_hint else ""
    return f" for {section} {name} ({who} {'has' if len(owners) == 1 else 'have'} it{hint})"


def foreign_at(loc: tuple, key: str, blocks_hint: bool) -> str | None:
    """:func:`foreign_field` for a validation error at ``loc`` (``('model', 'rnn')``), None elsewhere."""
    if len(loc) == 2 and loc[0] in CHOICES and loc[1] in CHOICES[loc[0]]:
        return foreign_field(str(loc[0]), str(loc[1]), key, blocks_hint)
    return None


def notes(composed: Composed, source: str | None) -> list[str]:
    """What the user should hear about the composition: repeated keys, file fields left out."""
    out = [f"note: {k} is given more than once; the last value counts" for k in dict.fromkeys(composed.repeated)]
    if composed.dropped:
        sections = "/".join(sorted({k.split(".")[0] for k in composed.dropped}))
        out.append(
            f"note: {source or 'the base config'} sets {', '.join(composed.dropped)}, which the chosen "
            f"{sections} has not; left out"
        )
    return out
