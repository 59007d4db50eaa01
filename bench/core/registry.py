"""Name -> class registries for tasks, models and sequence mixers.

A shipped entry is two modules found by name, as Hugging Face's configuration_/modeling_ pairs:
its config (pydantic, no torch) in ``PKG/configs/NAME.py``, registered with
``@MODELS.config("lstm")``, and its class (torch) in ``PKG/NAME.py``, registered with
``@MODELS.module("lstm")``. Importing a package's ``configs`` registers every config, so
``seqbench list`` and ``--print-config`` never import torch; the first use of an entry's ``cls``
imports its module (``PKG.configs.NAME`` -> ``PKG.NAME``). A file that keeps both in one place
registers them at once with ``@MODELS.register("name", config=NameConfig)``.

Plug-ins from other packages (entry points, ``pkg.module:Class`` import paths) are registered
the same way by ``bench/plugins.py``; one declared without torch (a config naming its class by import
path, ``seqbench.plugin``) is registered with ``Registry.declare`` and a loader that imports the class
on first use of ``cls``. ``generation`` counts registrations, so the config tree (``bench/config/run.py``)
rebuilds its unions when an entry arrives after it was built.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Callable, Iterator
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class UnknownNameError(KeyError):
    """Raised for a name that is not registered; the message lists the valid ones."""

    def __str__(self) -> str:  # KeyError quotes its message; we want it plain
        return str(self.args[0])


def module_of(config_module: str) -> str:
    """The module that holds the classes of a config module: ``seqbench.models.configs.tcn`` ->
    ``seqbench.models.tcn`` (a module outside a ``configs`` package holds both)."""
    head, sep, tail = config_module.rpartition(".configs.")
    return f"{head}.{tail}" if sep else config_module


class Entry(Generic[T]):
    """A registered name: its config class, its one-line doc and its class, imported on first use
    from the module beside the config's (``module_of``), or by ``loader`` when the entry has one (a
    plug-in declared without torch: ``Registry.declare``)."""

    def __init__(self, kind: str, name: str, config_cls: Any, doc: str, origin: str = "seqbench"):
        self.kind, self.name, self.config_cls, self.doc = kind, name, config_cls, doc
        self.origin = origin  # "seqbench", or where a plug-in came from (an entry point, an import path)
        self._cls: T | None = None
        self.loader: Callable[[], T] | None = None  # imports and checks the class (a declared plug-in)

    @property
    def cls(self) -> T:
        if self._cls is None and self.loader is not None:
            self._cls = self.loader()  # raises (a UserError naming the plug-in) when it cannot be used
        if self._cls is None:
            importlib.import_module(module_of(self.config_cls.__module__))
        if self._cls is None:
            raise LookupError(
                f"{self.name!r}: {module_of(self.config_cls.__module__)} registers no class with "
                f"@{self.kind.upper()}S.module({self.name!r}) for the config "
                f"{self.config_cls.__name__}"
            )
        return self._cls

    def __repr__(self) -> str:
        return f"Entry({self.name!r}, {self.config_cls.__name__})"


def first_line(obj: Any) -> str:
    doc = (obj.__dict__.get("__doc__") or "").strip().splitlines() if isinstance(obj, type) else []
    return doc[0] if doc else ""


class Registry(Generic[T]):
    def __init__(self, kind: str):
        self.kind = kind
        self._entries: dict[str, Entry[T]] = {}
        self.generation = 0  # bumped by every registration (bench/config/run.py rebuilds its unions)
        self.resolver: Callable[[Registry[T], str], Entry[T] | None] | None = None  # plug-ins (plugins.py)

    def config(self, name: str, origin: str = "seqbench") -> Callable[[Any], Any]:
        """Config class decorator: ``@MODELS.config("lstm")``. Its docstring's first line is what
        ``seqbench list`` shows; the class must declare ``name: Literal["lstm"] = "lstm"``."""

        def deco(config: Any) -> Any:
            if name in self._entries:
                raise ValueError(f"{self.kind} {name!r} is registered twice")
            fields = getattr(config, "model_fields", {})
            if "name" not in fields or fields["name"].default != name:
                raise ValueError(
                    f"{self.kind} {name!r}: its config class must declare name: Literal[{name!r}] = {name!r}"
                )
            self._entries[name] = Entry(self.kind, name, config, first_line(config), origin)
            self.generation += 1
            return config

        return deco

    def module(self, name: str) -> Callable[[T], T]:
        """Class decorator in the module beside the config: ``@MODELS.module("lstm")`` binds the class
        that ``MODELS.get("lstm").cls`` returns to the config registered under that name."""

        def deco(cls: T) -> T:
            entry = self._entries.get(name)
            if entry is None:
                raise LookupError(
                    f"@{self.kind.upper()}S.module({name!r}): no config registered under that name; "
                    f"register one with @{self.kind.upper()}S.config({name!r})"
                )
            if entry._cls is not None and entry._cls is not cls:
                raise ValueError(f"{self.kind} {name!r}: two classes registered with .module({name!r})")
            entry._cls = cls
            if not entry.doc:
                entry.doc = first_line(cls)
            return cls

        return deco

    def register(self, name: str, config: Any, origin: str = "seqbench") -> Callable[[T], T]:
        """Both at once: ``@TASKS.register("copy", config=CopyConfig)`` on the class."""

        def deco(cls: T) -> T:
            self.config(name, origin)(config)
            return self.module(name)(cls)

        return deco

    def declare(self, name: str, config: Any, loader: Callable[[], T], origin: str) -> Entry[T]:
        """Register ``config`` under ``name`` with the class still unimported: the first use of the
        entry's ``cls`` calls ``loader`` (a plug-in declared without torch, ``bench/plugins.py``)."""
        self.config(name, origin)(config)
        entry = self._entries[name]
        entry.loader = loader
        return entry

    def get(self, name: str) -> Entry[T]:
        entry = self._entries.get(name)
        if entry is None and self.resolver is not None and isinstance(name, str):
            entry = self.resolver(self, name)  # `pkg.module:Class` (raises a UserError naming what failed)
        if entry is None:
            close = difflib.get_close_matches(str(name), self.names(), n=1)
            hint = f" did you mean {close[0]}?" if close else ""
            raise UnknownNameError(
                f"unknown {self.kind} {name!r};{hint} choose from {', '.join(self.names())}, or name a class "
                f"by import path (pkg.module:Class)"
            )
        return entry

    def names(self) -> list[str]:
        return list(self._entries)

    def configs(self) -> list[Any]:
        return [e.config_cls for e in self._entries.values()]

    def __iter__(self) -> Iterator[Entry[T]]:
        return iter(list(self._entries.values()))

    def __contains__(self, name: object) -> bool:
        if name in self._entries:
            return True
        if isinstance(name, str) and ":" in name and self.resolver is not None:
            try:
                return self.get(name) is not None
            except Exception:  # noqa: BLE001  (an import path that does not resolve is not contained)
                return False
        return False

    def __len__(self) -> int:
        return len(self._entries)


TASKS: Registry[Any] = Registry("task")
MODELS: Registry[Any] = Registry("model")
MIXERS: Registry[Any] = Registry("mixer")
