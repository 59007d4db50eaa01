"""A user's plug-in package for the CLI tests (tests/bench/test_plugins.py, test_plugins_lazy.py,
test_startup.py, tests/bench/commands/test_refusals_everywhere.py): its modules in ``site/<name>/`` and a
``*.dist-info`` whose ``entry_points.txt`` announces them, as ``pip install`` would, so a fresh interpreter with
``site`` on ``PYTHONPATH`` discovers the entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path


def install_package(site: Path, name: str, modules: dict[str, str], entry_points: str) -> None:
    """``site/<name>/<module>.py`` for each of ``modules`` (source text, dedented) and the dist-info."""
    pkg = site / name
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for module, text in modules.items():
        (pkg / f"{module}.py").write_text(textwrap.dedent(text))
    dist = site / f"{name}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(entry_points)


def drive(driver: str, args: list[object], cwd: Path, sites: list[Path]) -> dict:
    """Run the script ``driver`` in a fresh interpreter (W&B off) with ``sites`` first on its path and
    each of ``args`` as a JSON argument; the JSON it printed after ``REPORT ``."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([*map(str, sites), os.environ.get("PYTHONPATH", "")]),
        "WANDB_MODE": "disabled",
    }
    p = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(driver), *map(json.dumps, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.split("REPORT ", 1)[1])
