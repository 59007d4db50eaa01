"""Sweep specs (YAML shipped in this package), claims (``claims/``, run by ``seqbench verify``) and the
Optuna runner.

Shipped specs and claims are package data, found through ``importlib.resources``, so they are there
after a plain ``pip install`` as well as in a checkout. Each has a name, its file stem (``demo``):
``seqbench sweep NAME`` / ``seqbench verify NAME`` run it from anywhere.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from seqbench.bench.core.errors import UserError

if TYPE_CHECKING:  # importlib.resources.abc is new in Python 3.11
    if sys.version_info >= (3, 11):
        from importlib.resources.abc import Traversable
    else:
        from importlib.abc import Traversable


@dataclass(frozen=True)
class ShippedSweep:
    name: str  # what `seqbench sweep NAME` takes
    question: str  # the spec's `question:` line, shown by `seqbench list`
    resource: Traversable


def _question(text: str) -> str:
    for line in text.splitlines():
        if line.startswith("question:"):
            return line.split(":", 1)[1].strip().strip("\"'")
    return ""


def _shipped(package: str) -> list[ShippedSweep]:
    return [
        ShippedSweep(res.name.removesuffix(".yaml"), _question(res.read_text()), res)
        for res in sorted(resources.files(package).iterdir(), key=lambda r: r.name)
        if res.is_file() and res.name.endswith(".yaml") and res.name != "registry.yaml"  # claims' registrations
    ]


def shipped_sweeps() -> list[ShippedSweep]:
    """Every shipped sweep spec, sorted by name."""
    return _shipped("seqbench.sweeps")


def shipped_claims() -> list[ShippedSweep]:
    """Every shipped claim (``seqbench verify``), sorted by name."""
    return _shipped("seqbench.sweeps.claims")


def spec_path(arg: str) -> Path:
    """The spec file ``seqbench sweep ARG`` means: an existing path wins; else the shipped spec named
    ARG (``demo``; ``sweeps/demo.yaml`` also finds it when run outside a checkout)."""
    path = Path(arg)
    if path.is_file():
        return path
    name = arg.removeprefix("sweeps/").removesuffix(".yaml")
    for s in shipped_sweeps():
        if s.name == name:
            return Path(str(s.resource))  # installed packages are plain folders (not zipped)
    names = ", ".join(s.name for s in shipped_sweeps())
    raise UserError(f"spec: no file {arg!r} and no shipped sweep of that name; shipped: {names}")
