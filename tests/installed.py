"""The source laid out as it installs, for the static tools that cannot follow pyproject's package-dir.

seqbench's top-level folders (bench/, models/, tasks/, sweeps/, reports/) install under one name,
``seqbench``, through package-dir. Python's import system follows that mapping (the editable install's
finder), but a tool that finds a package by walking folders does not: import-linter
(``tests/system/test_layering.py``) and mypy (``python -m tests.installed``, run by ``make lint``) check a copy
laid out as site-packages would hold it. mypy's messages name the copy's files; they are mapped back to
the repository's paths before they are printed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FOLDERS = ("bench", "models", "tasks", "sweeps", "reports")
# Kept between runs (git-ignored build/) so that mypy's cache, keyed by path, stays warm. SEQBENCH_LINT_ROOT
# moves the copy and its cache elsewhere, so that two checkouts' or sessions' checks never share them.
LINT_ROOT = Path(os.environ.get("SEQBENCH_LINT_ROOT") or REPO / "build" / "installed")


def installed_layout(dest: Path) -> Path:
    """``dest/seqbench/{__init__.py, bench/, models/, ...}``: the tree as site-packages would hold it.

    Modification times are kept (``copy2``), so an incremental checker sees unchanged files as such.
    """
    pkg = dest / "seqbench"
    skip = shutil.ignore_patterns("__pycache__", "*.yaml")  # the checkers read code only
    shutil.copytree(REPO / "seqbench", pkg, ignore=skip)
    for folder in FOLDERS:
        shutil.copytree(REPO / folder, pkg / folder, ignore=skip)
    return pkg


def repo_path(line: str, root: Path) -> str:
    """A message about ``[root/]seqbench/bench/x.py`` told as ``bench/x.py`` (``seqbench/x.py`` stays)."""
    prefix = "(?:" + re.escape(str(root) + "/") + ")?seqbench/"
    line = re.sub("^" + prefix + r"(?=(?:" + "|".join(FOLDERS) + r")/)", "", line)
    return re.sub("^" + prefix, "seqbench/", line)


def typecheck(root: Path = LINT_ROOT) -> int:
    """mypy (settings in pyproject's ``[tool.mypy]``) over a fresh installed-layout copy under ``root``."""
    shutil.rmtree(root / "seqbench", ignore_errors=True)
    installed_layout(root)
    exe = Path(sys.executable).with_name("mypy")
    r = subprocess.run(
        [
            str(exe),
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(REPO / ".mypy_cache" if root == REPO / "build" / "installed" else root / ".mypy_cache"),
            "-p",
            "seqbench",
        ],
        cwd=root,
        capture_output=True,
        text=True,
    )
    print("".join(repo_path(line, root) for line in (r.stdout + r.stderr).splitlines(keepends=True)), end="")
    return r.returncode


if __name__ == "__main__":
    sys.exit(typecheck())
