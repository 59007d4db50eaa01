"""The floors of the house, as import-linter contracts (``[tool.importlinter]`` in pyproject.toml).

cli > commands > reports > sweeps > training > config > plugins > models | tasks > core: a module imports
only from floors below its own (function-level imports included); models and tasks never import each
other; the ground (``bench/core``) imports no torch, Lightning, W&B or Optuna; and the config modules
(``models/configs``, ``tasks/**/configs``, the cost settings, plug-in discovery, ``bench/config.py`` and
``bench/composition.py``) import no torch, which keeps ``seqbench list`` and ``--print-config`` light.

import-linter finds a package by walking its folder, and seqbench's folders install under one name
through pyproject's package-dir, so the check runs over a copy of the source laid out as it installs.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.installed import REPO, installed_layout


def lint(root: Path) -> subprocess.CompletedProcess:
    exe = Path(sys.executable).with_name("lint-imports")
    return subprocess.run(
        [str(exe), "--config", str(REPO / "pyproject.toml"), "--no-cache", "--no-logo"],
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )


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
    ],
)
def test_a_wrong_import_breaks_a_contract(tmp_path, module, line, broken):
    """The check can fail: an upward, sideways or torch import (a lazy one too) is reported."""
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
        installed_layout(Path(tmp))
        result = lint(Path(tmp))
        print(result.stdout + result.stderr, end="")
        _sys.exit(result.returncode)
