"""A user's plug-in package for the CLI tests (tests/test_plugins.py, test_plugins_lazy.py,
test_refusals_everywhere.py): its modules in ``site/<name>/`` and a ``*.dist-info`` whose
``entry_points.txt`` announces them, as ``pip install`` would, so a fresh interpreter with ``site`` on
``PYTHONPATH`` discovers the entry points."""

from __future__ import annotations

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
