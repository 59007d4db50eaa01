"""Configs without torch: ``seqbench list`` and ``--print-config`` read every model's and task's
config class without importing torch, Lightning or a data set library.

A model or task stays one file (models/base.py), in two parts: its configs (pydantic classes
registered with ``@MODELS.config`` / ``@TASKS.config``, and the pure-Python helpers they call)
above a line that starts with ``MARKER``, and its module, data and metrics (torch) below it.

An ordinary import runs the whole file: the marker is a comment. Inside ``configs_only(...)``
(the light commands), files under the given packages run down to the marker only; the first use
of a name defined below it (``module.Name``, ``from module import Name``, a registry entry's
``cls``) runs the rest into the same module object, so every class is the one an ordinary
import makes and nothing differs but when torch is imported. tests/test_light_commands.py holds
the light commands to importing no torch.
"""
from __future__ import annotations
import __future__

import importlib.abc
import importlib.machinery
import sys
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, Iterator

MARKER = "# -- torch below"
_TAIL = "__configs_only_tail__"  # the source below the marker, until it has run


def split(source: str) -> tuple[str, str | None]:
    """(the head, the tail padded with blank lines so its line numbers are the file's), or
    (source, None) for a file without a marker line."""
    lines = source.splitlines(keepends=True)
    at = next((i for i, line in enumerate(lines) if line.startswith(MARKER)), None)
    if at is None:
        return source, None
    return "".join(lines[:at]), "\n" * at + "".join(lines[at:])


def complete(module: ModuleType) -> None:
    """Run the part of ``module`` below its marker, if an earlier ``configs_only`` import left it
    out (a no-op for a module imported whole)."""
    tail = module.__dict__.pop(_TAIL, None)
    if tail is None:
        return
    module.__dict__.pop("__getattr__", None)
    # The head's `from __future__ import annotations` must hold for the tail too (compile() does
    # not inherit it): without it, annotations below the marker would be evaluated at def time.
    flags = __future__.annotations.compiler_flag if module.__dict__.get("annotations") is \
        __future__.annotations else 0
    exec(compile(tail, module.__file__ or module.__name__, "exec", flags=flags, dont_inherit=True),
         module.__dict__)


def _completing_getattr(module: ModuleType) -> Any:
    def __getattr__(name: str) -> Any:  # PEP 562: called only for names the head did not define
        if name.startswith("__") and name.endswith("__"):  # probes (__path__, __wrapped__) stay cheap
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")
        complete(module)
        try:
            return module.__dict__[name]
        except KeyError:
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}") from None
    return __getattr__


class _HeadLoader(importlib.abc.Loader):
    def __init__(self, path: str):
        self.path = path

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        head, tail = split(Path(self.path).read_text(encoding="utf-8"))
        exec(compile(head, self.path, "exec", dont_inherit=True), module.__dict__)
        if tail is not None:
            module.__dict__[_TAIL] = tail
            module.__dict__["__getattr__"] = _completing_getattr(module)


class _HeadFinder(importlib.abc.MetaPathFinder):
    """Finds the plain-file modules under ``packages`` (not the packages' ``__init__``), or named
    by them, and loads their head only."""

    def __init__(self, packages: tuple[str, ...]):
        self.names = packages  # a plain module named here is split too (bench/training/cost.py)
        self.prefixes = tuple(f"{p}." for p in packages)

    def find_spec(self, name: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not (name in self.names or name.startswith(self.prefixes)) or path is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.submodule_search_locations is not None or not str(spec.origin).endswith(".py"):
            return None
        head = importlib.machinery.ModuleSpec(name, _HeadLoader(str(spec.origin)), origin=spec.origin)
        head.has_location = True  # sets __file__ (tracebacks, inspect.getsource)
        return head


@contextmanager
def configs_only(*packages: str) -> Iterator[None]:
    """Import the modules of ``packages`` (dotted names of packages or modules) first imported inside this block down to
    their marker. Modules imported before it are left as they are; the ones it imported stay in
    ``sys.modules`` afterwards and complete themselves when a name below the marker is used."""
    finder = _HeadFinder(packages)
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
