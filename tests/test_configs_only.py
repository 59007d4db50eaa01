"""Configs-only imports (bench/core/configs_only.py): a model or task file's configs load without
the torch part below its marker, and the first use of a name from that part loads it into the
same module. tests/test_commands.py holds the light commands to importing no torch."""
from __future__ import annotations

import ast
import builtins
import importlib
import re
import sys
import traceback
from pathlib import Path

import pytest

from seqbench.bench.core.configs_only import MARKER, configs_only, split
from seqbench.bench.core.registry import Registry
from tests.helpers import REPO

TOY = f'''"""A toy entry: config above the marker, module below."""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

from {{pkg}} import registry


@registry.REG.config("toy")
class ToyConfig(BaseModel):
    """Toy: the line `list` shows."""

    name: Literal["toy"] = "toy"
    width: int = 3

    def doubled(self) -> int:
        return 2 * self.width


{MARKER}: the module.
from {{pkg}} import heavy


@registry.REG.module("toy")
class Toy:
    def __init__(self, cfg: NotDefinedAnywhere):  # a string under the head's `from __future__ import annotations`
        self.cfg = cfg


def fails() -> None:
    raise RuntimeError("from the tail")
'''


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """A package ``toypkg_<n>`` with a registry, a module standing for torch (it counts its imports)
    and a two-part entry file; yields (package name, the entry file)."""
    pkg = "toypkg_" + re.sub(r"\W", "_", tmp_path.name)  # one per test: sys.modules keeps packages
    root = tmp_path / pkg
    root.mkdir()
    (root / "__init__.py").write_text("")
    (root / "registry.py").write_text("from seqbench.bench.core.registry import Registry\nREG = Registry('toy')\n")
    (root / "heavy.py").write_text("import builtins\nbuiltins.HEAVY_IMPORTS = getattr(builtins, 'HEAVY_IMPORTS', 0) + 1\n")
    entry = root / "entry.py"
    entry.write_text(TOY.replace("{pkg}", pkg))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(builtins, "HEAVY_IMPORTS", 0, raising=False)
    yield pkg, entry
    for name in [m for m in sys.modules if m.startswith(pkg)]:
        del sys.modules[name]


def test_the_head_loads_alone_and_the_tail_on_first_use(toy):
    pkg, entry = toy
    with configs_only(f"{pkg}.entry"):
        mod = importlib.import_module(f"{pkg}.entry")
    reg = importlib.import_module(f"{pkg}.registry").REG
    assert builtins.HEAVY_IMPORTS == 0 and "Toy" not in vars(mod)
    e = reg.get("toy")
    assert e.config_cls is mod.ToyConfig and e.doc == "Toy: the line `list` shows."
    assert mod.ToyConfig(width=5).doubled() == 10  # the head works on its own
    assert builtins.HEAVY_IMPORTS == 0
    assert e.cls is mod.Toy and builtins.HEAVY_IMPORTS == 1  # the registry's cls ran the tail, once
    assert mod.Toy(mod.ToyConfig()).cfg.width == 3
    assert builtins.HEAVY_IMPORTS == 1


def test_a_tail_name_loads_the_tail_through_from_import(toy):
    pkg, _ = toy
    with configs_only(pkg):
        from_import = f"from {pkg}.entry import fails"
        exec(from_import, {})
    assert builtins.HEAVY_IMPORTS == 1


def test_a_tail_traceback_points_at_the_file_line(toy):
    pkg, entry = toy
    with configs_only(pkg):
        mod = importlib.import_module(f"{pkg}.entry")
    with pytest.raises(RuntimeError) as e:
        mod.fails()
    frame = traceback.extract_tb(e.tb)[-1]
    line = next(i for i, text in enumerate(entry.read_text().splitlines(), 1) if "from the tail" in text)
    assert (Path(frame.filename), frame.lineno) == (entry, line)


def test_outside_the_block_a_file_imports_whole(toy):
    pkg, _ = toy
    mod = importlib.import_module(f"{pkg}.entry")
    assert builtins.HEAVY_IMPORTS == 1 and "Toy" in vars(mod)


def test_a_config_without_a_module_says_so():
    reg = Registry("model")

    @reg.config("lone")
    class LoneConfig:
        """Lone."""
        model_fields = {"name": type("F", (), {"default": "lone"})()}

    with pytest.raises(LookupError, match=r"'lone': its file registers the config \(LoneConfig\) but no class"):
        reg.get("lone").cls


def test_split_keeps_line_numbers():
    head, tail = split(f"a = 1\nb = 2\n{MARKER}\nc = 3\n")
    assert head == "a = 1\nb = 2\n" and tail == f"\n\n{MARKER}\nc = 3\n"
    assert split("a = 1\n") == ("a = 1\n", None)


SHIPPED = sorted(p for folder in ("models", "tasks", "bench") for p in (REPO / folder).rglob("*.py")
                 if MARKER in p.read_text())


def _bound(tree: ast.AST) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            names.add(node.name)
    return names


def test_the_shipped_two_part_files_exist():
    want = {"models/base.py", "models/recurrent.py", "models/tcn.py", "models/transformer.py", "tasks/base.py",
            "tasks/synthetic/copy.py", "tasks/text/lm.py", "bench/training/cost.py"}
    assert want <= {str(p.relative_to(REPO)) for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(REPO)))
def test_a_head_uses_no_name_only_its_tail_defines(path):
    """A configs-only import runs the head alone, and a global the head's code looks up is not
    found through the module's __getattr__: every name the head uses must be bound in the head
    (annotations excepted: they are strings under `from __future__ import annotations`)."""
    head, tail = split(path.read_text())
    tree = ast.parse(head)
    for node in ast.walk(tree):  # drop annotations
        for field in ("annotation", "returns"):
            if getattr(node, field, None) is not None:
                setattr(node, field, None)
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    missing = used - _bound(tree) - set(dir(builtins))
    assert not missing, f"{path.relative_to(REPO)}: the head uses {sorted(missing)}, defined only below {MARKER!r}"
    assert not ({"torch", "nn", "F", "torchmetrics", "np"} & _bound(tree)), "the head imports torch/numpy"
