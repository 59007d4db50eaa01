"""The floors of the house, as import-linter contracts (``[tool.importlinter]`` in pyproject.toml).

cli > commands > reports > sweeps > training > config > plugins > models | tasks > core: a module imports
only from floors below its own (function-level imports included); models and tasks never import each
other; the ground (``bench/core``) imports no torch, Lightning, W&B or Optuna; and the config modules
(``models/configs``, ``tasks/**/configs``, the cost settings, plug-in discovery, ``bench/config/`` and
``bench/composition.py``) import no torch, which keeps ``seqbench list`` and ``--print-config`` light.
Inside ``sweeps``, ``sweeps/claims`` is a floor of its own above the rest: nothing else in ``sweeps``
imports it. No package's modules import each other in a cycle (import-linter's ``acyclic_siblings``,
function-level imports included), and no two modules import each other under ``TYPE_CHECKING`` either,
which import-linter does not see here (:func:`mutual_imports` reads every import statement).

import-linter finds a package by walking its folder, and seqbench's folders install under one name
through pyproject's package-dir, so the check runs over a copy of the source laid out as it installs.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.installed import REPO, installed_layout


def lint(root: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(exe), str(REPO / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


def _module_names(pkg: Path) -> dict[str, Path]:
    """``seqbench.x.y`` -> its file, for every module of the installed-layout package at ``pkg``."""
    out = {}
    for path in pkg.rglob("*.py"):
        parts = [pkg.name, *path.relative_to(pkg).with_suffix("").parts]
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _imported(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The package's modules that ``name`` imports anywhere: top level, in a function, under TYPE_CHECKING."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package if node.level else ""
            base = ".".join(x for x in (base, node.module) if x)
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:  # a name imported from a module: that module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def mutual_imports(pkg: Path) -> list[tuple[str, str]]:
    """The pairs of modules under ``pkg`` that import each other, however each import is made."""
    modules = _module_names(pkg)
    edges = {name: _imported(name, path, modules) for name, path in modules.items()}
    return sorted((a, b) for a in edges for b in edges[a] if a < b and a in edges[b])


def test_no_two_modules_import_each_other(tmp_path):
    assert mutual_imports(installed_layout(tmp_path)) == []


def test_a_mutual_import_under_type_checking_is_found(tmp_path):
    """What import-linter does not see here (exclude_type_checking_imports) the check above does."""
    pkg = installed_layout(tmp_path)
    path = pkg / "bench" / "training" / "module.py"
    line = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..training.trained import load_model\n"
    path.write_text(path.read_text() + "\n" + line)
    assert mutual_imports(pkg) == [("seqbench.bench.training.module", "seqbench.bench.training.trained")]


def test_the_floors_hold(tmp_path):
    installed_layout(tmp_path)
    r = lint(tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "0 broken" in r.stdout


@pytest.mark.parametrize(
    "module, line, broken",
    [
        ("models/tcn.py", "from seqbench.tasks.base import Task  # noqa", "Floors"),
        ("bench/core/stats.py", "import torch  # noqa", "-> torch"),
        ("models/configs/tcn.py", "import torch  # noqa", "-> torch"),
        ("tasks/text/configs/lm.py", "from seqbench.tasks.text import data  # noqa", "Config modules"),
        ("sweeps/spec.py", "def _f():\n    from seqbench.bench.commands import sweep  # noqa\n", "Floors"),
        ("sweeps/frontier.py", "from seqbench.sweeps.claims import measure  # noqa", "sweeps/claims is a floor"),
        ("bench/training/module.py", "def _f():\n    from seqbench.bench.training import trained  # noqa\n", "cycles"),
        ("sweeps/spec.py", "def _f():\n    from seqbench.sweeps import worker  # noqa\n", "cycles"),
        ("reports/runs.py", "def _f():\n    from seqbench.bench.config import metric_goal_of  # noqa\n", "build API"),
    ],
)
def test_a_wrong_import_breaks_a_contract(tmp_path, module, line, broken):
    """The check can fail: an upward, sideways, cyclic or torch import (a lazy one too) is reported."""
    pkg = installed_layout(tmp_path)
    path = pkg / module
    path.write_text(path.read_text() + "\n" + line + "\n")
    r = lint(tmp_path)
    assert r.returncode != 0
    assert "1 broken" in r.stdout and broken in r.stdout, r.stdout


if __name__ == "__main__":  # `make lint-imports`: the same check outside pytest, with import-linter's report
    import sys as _sys
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        mutual = mutual_imports(installed_layout(Path(tmp)))
        result = lint(Path(tmp))
        print(result.stdout + result.stderr, end="")
        for a, b in mutual:
            print(f"{a} and {b} import each other (TYPE_CHECKING and function-level imports count)")
        _sys.exit(result.returncode or int(bool(mutual)))
