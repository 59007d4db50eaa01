"""The notebook API is typed for IDEs: ``seqbench/__init__.py`` resolves its names lazily at run time (so
``import seqbench`` loads no torch), and its ``if TYPE_CHECKING:`` block imports the same names for the static
tools. mypy, run on a snippet that ``reveal_type``s every public name, must see the real function or class,
never ``Any`` (what a module ``__getattr__`` alone gives an IDE)."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import seqbench
from tests.installed import LINT_ROOT, REPO, installed_layout

INIT = REPO / "seqbench" / "__init__.py"


def type_checking_imports() -> dict[str, tuple[str, str]]:
    """The names ``seqbench/__init__.py`` imports under ``if TYPE_CHECKING:``, as ``_API`` writes them."""
    tree = ast.parse(INIT.read_text())
    block = next((n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"), None)
    if block is None:
        return {}
    return {
        a.asname or a.name: (n.module or "", a.name)
        for n in block.body
        if isinstance(n, ast.ImportFrom)
        for a in n.names
    }


def test_the_type_checking_block_names_what_the_lazy_table_loads():
    assert type_checking_imports() == seqbench._API  # a name added to one and not the other is untyped or unloadable


@pytest.mark.slow
def test_mypy_sees_every_public_name_as_its_real_function_or_class(tmp_path):
    """Each ``seqbench.NAME`` reveals the type of the object ``_API`` names, imported from its own module (a
    class: its constructor, returning the class). About a minute on a cold cache (mypy reads torch's and
    pydantic's stubs); the cache under the lint root (``tests/installed.py``) keeps later runs shorter."""
    installed_layout(tmp_path)  # mypy cannot follow pyproject's package-dir: it reads the installed layout
    names = list(seqbench._API)
    lines = ["import seqbench"]
    for n in names:
        module, attr = seqbench._API[n]
        lines += [f"from {module} import {attr} as _real_{n}", f"reveal_type(seqbench.{n})", f"reveal_type(_real_{n})"]
    (tmp_path / "snippet.py").write_text("\n".join(lines) + "\n")
    r = subprocess.run(
        [
            str(Path(sys.executable).with_name("mypy")),
            "--config-file",
            str(REPO / "pyproject.toml"),
            "--cache-dir",
            str(LINT_ROOT / ".mypy_cache_api"),
            "--follow-imports=silent",  # only the snippet's notes: the package's own errors are `make lint`'s
            "--no-error-summary",
            "snippet.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    revealed = {
        int(m[1]): m[2] for m in re.finditer(r'^snippet\.py:(\d+): note: Revealed type is "(.*)"$', r.stdout, re.M)
    }
    assert len(revealed) == 2 * len(names), r.stdout + r.stderr
    for i, name in enumerate(names):
        module, attr = seqbench._API[name]
        seen, real = revealed[3 + 3 * i], revealed[4 + 3 * i]
        assert seen != "Any", f"seqbench.{name} is Any to a type checker (its TYPE_CHECKING import is missing)"
        assert seen == real, f"seqbench.{name}: {seen}, but {module}.{attr} is {real}"
        if attr[0].isupper():  # a class (its constructor, returning it)
            assert seen.endswith(f"-> {module}.{attr}") or f"-> {module}.{attr}" in seen, (name, seen)
