"""MkDocs hook (``mkdocs.yml``: ``hooks:``): the source laid out as it installs, for the API reference.

seqbench's folders (bench/, models/, tasks/, sweeps/, reports/) install under one name, ``seqbench``,
through pyproject's package-dir, which mkdocstrings' static loader (griffe) cannot follow in place. Before
each build this copies the tree into ``build/docs/seqbench/`` (``tests/installed.py``'s layout, as mypy
and import-linter read it), where ``mkdocs.yml`` points mkdocstrings.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
API_ROOT = REPO / "build" / "docs"


def _lay_out() -> None:
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    from tests.installed import installed_layout

    shutil.rmtree(API_ROOT / "seqbench", ignore_errors=True)
    installed_layout(API_ROOT)


def on_startup(command: str, dirty: bool) -> None:
    """Before any plug-in's ``on_config``: mkdocstrings fixes its search paths there, so the copy must exist."""
    _lay_out()


def on_config(config: Any, **kwargs: Any) -> Any:
    """Again before every rebuild of ``mkdocs serve``, so the reference follows edits to the source."""
    _lay_out()
    return config
