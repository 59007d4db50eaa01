"""Name -> class registries for tasks and models.

Entries register themselves with decorators and are imported explicitly by their
package's ``__init__`` (no dotted import strings that can go stale). Each entry
carries its pydantic config class, which is what ``RunConfig`` validates against, and
its class (module or task), registered apart so that the configs can be read without
torch (``configs_only``).
"""
from __future__ import annotations

import sys
from typing import Any, Callable, Generic, Iterator, TypeVar

from seqbench.bench.core.configs_only import complete

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised for a name that is not registered; the message lists the valid ones."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


class Entry(Generic[T]):
    """A registered name: its config class, its one-line doc and (once its file's module part
    has run) its class. ``cls`` runs that part if a ``configs_only`` import left it out."""

    def __init__(self, kind: str, name: str, config_cls: Any, doc: str):
        self.kind, self.name, self.config_cls, self.doc = kind, name, config_cls, doc
        self._cls: T | None = None

    @property
    def cls(self) -> T:
        if self._cls is None:
            complete(sys.modules[self.config_cls.__module__])
        if self._cls is None:
            raise LookupError(f"{self.name!r}: its file registers the config ({self.config_cls.__name__}) but no "
                              f"class with @{self.kind.upper()}S.module({self.name!r})")
        return self._cls

    def __repr__(self) -> str:
        return f"Entry({self.name!r}, {self.config_cls.__name__})"


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}

    def config(self, name: str) -> Callable[[Any], Any]:
        """Config class decorator, above a file's marker (bench/core/configs_only.py):
        ``@MODELS.config("lstm")``. Its docstring's first line is what ``seqbench list`` shows."""

        def deco(config: Any) -> Any:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            fields = getattr(config, "model_fields", {})
            if "name" not in fields or fields["name"].default != name:
                raise ValueError(
                    f"{self.kind} {name!r}: its config class must declare name: Literal[{name!r}] = {name!r}"
                )
            doc = (config.__dict__.get("__doc__") or "").strip().splitlines()
            self._entries[name] = Entry(self.kind, name, config, doc[0] if doc else "")
            return config

        return deco

    def module(self, name: str) -> Callable[[T], T]:
        """Class decorator below the marker: ``@MODELS.module("lstm")`` binds the class that
        ``MODELS.get("lstm").cls`` returns to the config registered under that name."""

        def deco(cls: T) -> T:
            entry = self.get(name)
            if entry._cls is not None:
                raise ValueError(f"{self.kind} {name!r}: two classes registered with .module({name!r})")
            entry._cls = cls
            if not entry.doc:
                doc = (getattr(cls, "__doc__", None) or "").strip().splitlines()
                entry.doc = doc[0] if doc else ""
            return cls

        return deco

    def register(self, name: str, config: Any) -> Callable[[T], T]:
        """Both at once, for a file that keeps no configs-only part (``seqbench list`` then imports
        its torch): ``@TASKS.register("copy", config=CopyConfig)`` on the class."""

        def deco(cls: T) -> T:
            self.config(name)(config)
            return self.module(name)(cls)

        return deco

    def get(self, name: str) -> Entry[T]:
        try:
            return self._entries[name]
        except KeyError:
            raise UnknownNameError(
                f"unknown {self.kind} {name!r}; choose from {', '.join(self.names())}"
            ) from None

    def names(self) -> list[str]:
        return list(self._entries)

    def configs(self) -> list[Any]:
        return [e.config_cls for e in self._entries.values()]

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(self._entries.values())

    def __contains__(self, name: str) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)


TASKS: Registry[Any] = Registry("task")
MODELS: Registry[Any] = Registry("model")
