"""Base class for every config section: typed, frozen, no unknown keys, finite numbers; and the
marker that keeps a field out of the config hash."""

from __future__ import annotations

import types
import typing
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, field_validator, model_validator
from pydantic.fields import FieldInfo

INT_LIMIT = 2**31 - 1  # sizes, steps and lengths beyond this are typos, not experiments

# ``Field(..., json_schema_extra=NOT_IDENTITY)``: the field says where or how a run is logged, observed
# or scheduled, not what is trained, so it stays out of the config hash (two runs that differ only
# there are replicates of one experiment). Declared on the field, so a new field is in the hash unless
# it says otherwise; it also shows as ``"identity": false`` in the JSON schema.
NOT_IDENTITY: dict[str, Any] = {"identity": False}
# ``Field(default, json_schema_extra=ADDED_LATER)``: a field added after runs were recorded enters the
# hash only when it differs from its default, so every config written before it existed keeps its
# hash (old run folders resume, old studies continue) and a run that sets it is a new experiment.
ADDED_LATER: dict[str, Any] = {"identity": "when-set"}


def in_identity(field: FieldInfo) -> bool:
    """Whether ``field`` enters the config hash (every field not marked ``NOT_IDENTITY``)."""
    extra = field.json_schema_extra
    return not (isinstance(extra, dict) and extra.get("identity") is False)


def identity(section: BaseModel) -> dict[str, Any]:
    """``section`` as JSON types without the fields marked ``NOT_IDENTITY``, at any depth: what
    the config hash is taken of."""
    d = section.model_dump(mode="json")
    for name, field in type(section).model_fields.items():
        extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
        if not in_identity(field) or (
            extra.get("identity") == "when-set"
            and getattr(section, name) == field.get_default(call_default_factory=True)
        ):
            del d[name]
        elif isinstance(value := getattr(section, name), BaseModel):
            d[name] = identity(value)
    return d


_S = typing.TypeVar("_S", bound="Section")


class Section(BaseModel):
    """A config section. Unknown keys are errors; instances are immutable.

    Change a config by rebuilding it (``bench.config.build_config`` or ``override``), never with
    ``model_copy(update=...)``, which skips validation.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", validate_default=True, allow_inf_nan=False, defer_build=True)
    # the dotted keys the user gave (command line, file, sweep spec), recorded by the composition that built
    # the config: pydantic's model_fields_set does not survive a dump-and-validate, after which all are set
    _typed: frozenset[str] = PrivateAttr(default_factory=frozenset)

    @property
    def typed(self) -> frozenset[str]:
        """Dotted keys the user set (``tracking.wandb``); W&B's WANDB_* variables yield to these only."""
        return self._typed

    def with_typed(self: _S, keys: typing.Iterable[str]) -> _S:
        """This section, recording ``keys`` as what the user typed (the composition calls it once)."""
        self._typed = frozenset(keys)
        return self

    def __eq__(self, other: object) -> bool:  # the configuration, not how it was typed
        return type(other) is type(self) and self.__dict__ == other.__dict__

    @model_validator(mode="before")
    @classmethod
    def _bools_are_not_numbers(cls, data: Any) -> Any:
        # pydantic's lax mode reads true as 1: `optim.lr=true` would train at lr 1.0. A boolean
        # given to a field that takes none goes on as the text typed, which a number field refuses.
        if not isinstance(data, dict):
            return data
        out = dict(data)
        for k, v in data.items():
            field = cls.model_fields.get(k)
            if field is None or _admits_bool(field.annotation):
                continue
            if isinstance(v, bool):
                out[k] = str(v).lower()
            elif isinstance(v, list) and typing.get_origin(field.annotation) is list:
                out[k] = [str(x).lower() if isinstance(x, bool) else x for x in v]
        return out

    @field_validator("*", mode="after")
    @classmethod
    def _bounded_ints(cls, v: Any) -> Any:
        values = v if isinstance(v, (list, tuple)) else [v]
        for x in values:
            if isinstance(x, int) and not isinstance(x, bool) and abs(x) > INT_LIMIT:
                raise ValueError(f"{x} is out of range (integers here must be below 2**31)")
        return v


def _admits_bool(annotation: Any) -> bool:
    """Whether a field typed ``annotation`` takes true/false as themselves."""
    if annotation is bool or annotation is Any:
        return True
    args = typing.get_args(annotation)
    if typing.get_origin(annotation) is typing.Literal:
        return any(isinstance(a, bool) for a in args)
    if typing.get_origin(annotation) is list:
        return False
    return any(_admits_bool(a) for a in args)


_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def describe_field(field: FieldInfo) -> str:
    """The values a config field accepts, for ``seqbench list -v``: ``adam | adamw | sgd | radam``,
    ``>= 0, < 1``, ``> 0 or null``, ``integer or auto``, ``each >= 1``; "" when the type says it all
    (text, true/false, a section)."""
    args = typing.get_args(field.annotation) if _is_union(field.annotation) else (field.annotation,)
    members = [a for a in args if a is not type(None)]
    parts = [p for a in members if (p := _member(a, field.metadata, several=len(members) > 1))]
    if not parts:
        return ""
    return " or ".join(parts) + (" or null" if type(None) in args else "")


def _is_union(annotation: Any) -> bool:
    return typing.get_origin(annotation) in (typing.Union, types.UnionType)


def _member(annotation: Any, metadata: list[Any], several: bool) -> str:
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(str(v).lower() if isinstance(v, bool) else str(v) for v in typing.get_args(annotation))
    if typing.get_origin(annotation) is list:
        inner = typing.get_args(annotation)
        each = _bounds(
            [
                m
                for a in inner[:1]
                if typing.get_origin(a) is typing.Annotated
                for info in typing.get_args(a)[1:]
                for m in getattr(info, "metadata", [info])
            ]
        )
        n = next((m.min_length for m in metadata if hasattr(m, "min_length")), 0)
        return ", ".join(p for p in (f"each {each}" if each else "", f"at least {n} items" if n > 1 else "") if p)
    bounds = _bounds(metadata) if annotation in (int, float) else ""
    if several and annotation in (int, float):
        return ("integer" if annotation is int else "number") + (f" {bounds}" if bounds else "")
    return bounds


def _bounds(metadata: list[Any]) -> str:
    return ", ".join(
        f"{sign} {getattr(m, key)}"
        for m in metadata
        for key, sign in _BOUNDS
        if hasattr(m, key) and getattr(m, key) is not None
    )
