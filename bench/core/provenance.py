"""Which code produced a run or a study: the git commit of a seqbench checkout, else the package version.

A plain ``pip install seqbench`` puts the code in site-packages, often inside somebody else's git
repository (a project's venv): the commit of *that* repository says nothing about seqbench. So a
SHA is recorded only when the folder holding this package's ``pyproject.toml`` (with
``name = "seqbench"``) is itself the top of a git work tree; otherwise ``git_sha()`` is None and
the installed version (``package_version()``) identifies the code. Imports only the standard library.
"""

from __future__ import annotations

import functools
import platform
import re
import subprocess
from importlib import metadata
from pathlib import Path

# this file is bench/core/provenance.py, and bench/ sits directly under the project root in a checkout
# (package-dir maps it to seqbench.bench)
SOURCE_ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("seqbench", "torch", "pytorch-lightning", "torchmetrics", "pydantic", "optuna", "wandb", "datasets")
_OUR_NAME = re.compile(r'^\s*name\s*=\s*["\']seqbench["\']\s*$', re.M)


def _git(*args: str, cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def checkout_root(root: Path = SOURCE_ROOT) -> Path | None:
    """``root`` when it is a git checkout of seqbench itself (its pyproject names seqbench and it is
    the top of the work tree), else None."""
    try:
        if not _OUR_NAME.search((root / "pyproject.toml").read_text()):
            return None
    except OSError:
        return None
    top = _git("rev-parse", "--show-toplevel", cwd=root)
    return root if top is not None and Path(top).resolve() == root.resolve() else None


# Files the harness itself writes into its checkout that are not code: `verify` appends a new registration
# to the claims' registry before its runs start, so counting it would mark every run of a fresh
# registration "+dirty" although the code it ran is the commit's (git pathspecs, relative to the root).
NOT_CODE = (":(exclude)sweeps/claims/registry.yaml",)


def git_sha(root: Path = SOURCE_ROOT) -> str | None:
    """Commit of the seqbench checkout (``+dirty`` with uncommitted changes); None outside one.

    For this package's own checkout it is read at the first call in a process and kept (forked sweep
    workers inherit it; a sweep reads it when its study starts): a commit made while a long sweep runs
    does not relabel its later runs with code they did not run."""
    return _own_sha() if root == SOURCE_ROOT else _read_sha(root)


@functools.cache
def _own_sha() -> str | None:
    return _read_sha(SOURCE_ROOT)


def _read_sha(root: Path) -> str | None:
    if checkout_root(root) is None:
        return None
    sha = _git("rev-parse", "HEAD", cwd=root)
    if not sha:
        return None
    dirty = _git("status", "--porcelain", "--untracked-files=no", "--", ".", *NOT_CODE, cwd=root)
    return sha + ("+dirty" if dirty else "")


def package_version() -> str | None:
    """The installed seqbench version; None when running from a tree that was never installed."""
    try:
        return metadata.version("seqbench")
    except metadata.PackageNotFoundError:
        return None


def versions() -> dict[str, str]:
    """Python and the versions of the packages that change results."""
    out = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            pass
    return out
