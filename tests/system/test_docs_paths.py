"""Every module and file the prose names exists: docstrings, comments, the README and the docs pages (docs/).

A dotted name rooted in the package (``seqbench.bench.config``, or as the folders read, ``bench.config``,
``sweeps.claims.judge``, ``tests.helpers``) must resolve: its longest prefix that is a module exists, and
what follows names something defined at that module's top level (``bench.config.build_config``). A path
(``bench/training/flops.py``, ``sweeps/claims/postln_warmup.yaml``, ``tests/system/test_layering.py``) must be a
file of the repository. Placeholders (``models/configs/NAME.py``, ``outputs/runs/<run_id>``, globs) are
left alone.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest

from tests.installed import FOLDERS, REPO

ROOTS = ("seqbench", *FOLDERS, "tests", "benchmarks", "docs")
SOURCES = ("seqbench", *FOLDERS, "tests", "benchmarks", "docs")
_DOTTED = re.compile(r"(?<![\w./-])(?:seqbench|" + "|".join(FOLDERS) + r"|tests)(?:\.[A-Za-z_]\w*)+")
_PATH = re.compile(r"(?<![\w./-])(?:" + "|".join(ROOTS) + r")/[\w./-]*\.(?:py|yaml|md|json|toml)\b")

_LINK = re.compile(r"\]\(([^()\s]+)\)")  # a Markdown link's target: [text](target)
_FENCE = re.compile(r"^```.*?^```", re.M | re.S)

PLACEHOLDERS = {"x", "NAME"}  # `bench/x.py`, `seqbench.bench.x`: any module, in prose about modules
NOT_OURS = {
    "seqbench.mixers",  # an entry-point group (bench/plugins.py), named like a module but none
    "models/s4/s4d.py",  # the state-spaces/s4 repository's file that models/s4d.py follows
}
# Stale names allowed for now, each with where it should point (none today); an entry no longer stale fails
# `test_known_stale_names_are_still_there`, so the list can only shrink.
KNOWN_STALE: set[tuple[str, str]] = set()


def _module_file(parts: list[str]) -> Path | None:
    """The file of dotted module ``parts`` (``['seqbench', 'bench', 'config']``), or None."""
    if parts[0] == "seqbench" and len(parts) > 1 and parts[1] in FOLDERS:
        parts = parts[1:]  # seqbench.bench.x lives in bench/x.py
    base = REPO.joinpath(*parts)
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


@cache
def _top_level_names(path: Path) -> frozenset[str]:
    """Names a module defines at its top level (and a package's submodules; seqbench's lazy API)."""
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree) if path.name == "__init__.py" else tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Dict):  # seqbench/__init__.py's _API: the names its __getattr__ serves
            names.update(k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str))
    if path.name == "__init__.py":
        names.update(p.stem for p in path.parent.iterdir() if p.suffix == ".py" or (p / "__init__.py").is_file())
    return frozenset(names)


def dotted_exists(name: str) -> bool:
    parts = name.split(".")
    for n in range(len(parts), 0, -1):
        path = _module_file(parts[:n])
        if path is not None:
            return n == len(parts) or parts[n] in _top_level_names(path)
    return False


def path_exists(path: str) -> bool:
    return (REPO / path.rstrip(".")).exists()


def _placeholder(name: str) -> bool:
    return bool(PLACEHOLDERS & set(re.split(r"[./]", name))) or bool(re.search(r"[*<>{}]|[A-Z]{3,}/|[A-Z]{3,}\.", name))


def stale_names(text: str) -> list[str]:
    """The module and file names in ``text`` that do not exist."""
    dotted = [m.rstrip(".") for m in _DOTTED.findall(text)]
    paths = _PATH.findall(text)
    return [m for m in dotted if not _placeholder(m) and m not in NOT_OURS and not dotted_exists(m)] + [
        m for m in paths if not _placeholder(m) and m not in NOT_OURS and not path_exists(m)
    ]


def prose(path: Path) -> Iterator[str]:
    """A Python file's docstrings and comments; a Markdown file's text (its link targets are checked by
    ``test_every_relative_link_resolves``: a link to the page of reports is not a name in the module)."""
    text = path.read_text()
    if path.suffix != ".py":
        yield _LINK.sub("]()", text)
        return
    tree = ast.parse(text)
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            if (doc := ast.get_docstring(node)) is not None:
                yield doc
    for tok in tokenize.generate_tokens(io.StringIO(text).readline):
        if tok.type == tokenize.COMMENT:
            yield tok.string


def documents() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    for root in SOURCES:
        files += sorted(p for p in (REPO / root).rglob("*.py") if "__pycache__" not in p.parts)
    return files


def findings() -> set[tuple[str, str]]:
    return {(str(p.relative_to(REPO)), name) for p in documents() for text in prose(p) for name in stale_names(text)}


def test_every_named_module_and_file_exists():
    stale = findings() - KNOWN_STALE
    assert not stale, "names of modules or files that do not exist:\n" + "\n".join(
        f"  {where}: {name}" for where, name in sorted(stale)
    )


# Test citations: every file the project names a test from, read whole (code and strings too, not only prose):
# a moved or renamed test leaves no dead path under tests/, no dead test id and no dead `python -m` module.
CITING_FILES = ("README.md", "Makefile", "pyproject.toml", "mkdocs.yml")
CITING_FOLDERS = (".ci", "docs", "benchmarks", "seqbench", *FOLDERS, "tests")
CITING_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".toml", ".sh", ""}
_TEST_PATH = re.compile(r"(?<![\w./-])(tests/[\w./*-]*\.py)(?:::(\w+))?")
_TEST_MODULE = re.compile(r"(?<![\w./-])tests(?:\.[A-Za-z_]\w*)+")


def citing_files() -> list[Path]:
    """The files that may cite a test: the README, Makefile, pyproject, the docs, CI, benchmarks, claim files,
    the package and the tests, all but this file (whose examples cite dead tests on purpose)."""
    files = [REPO / name for name in CITING_FILES]
    for folder in CITING_FOLDERS:
        files += sorted(
            p
            for p in (REPO / folder).rglob("*")
            if p.is_file() and p.suffix in CITING_SUFFIXES and "__pycache__" not in p.parts
        )
    return [p for p in files if p.resolve() != Path(__file__).resolve()]


def dead_test_citations(text: str) -> list[str]:
    """The tests ``text`` cites that do not exist: a path (a glob must match some file), a path's test id
    (``tests/x.py::test_y``: ``test_y`` defined in it) or a dotted module (``python -m tests.system.x``)."""
    dead = []
    for m in _TEST_PATH.finditer(text):
        path, name = m[1], m[2]
        files = sorted(REPO.glob(path)) if "*" in path else [REPO / path] if (REPO / path).is_file() else []
        if not files:
            dead.append(m[0])
        elif name and not any(re.search(rf"^\s*(?:async )?(?:def|class) {name}\b", f.read_text(), re.M) for f in files):
            dead.append(m[0])
    dead += [m.rstrip(".") for m in _TEST_MODULE.findall(text) if not dotted_exists(m.rstrip("."))]
    return dead


def test_every_cited_test_exists():
    """Every test the project cites by path, id or module (docs, README, Makefile, CI, pyproject, claim files,
    benchmarks, the package's and the tests' own code and prose) is there: moving a test updates its citations."""
    dead = {
        (str(p.relative_to(REPO)), name)
        for p in citing_files()
        for name in dead_test_citations(p.read_text(errors="replace"))
    }
    assert not dead, "citations of tests that do not exist:\n" + "\n".join(
        f"  {where}: {name}" for where, name in sorted(dead)
    )


def test_the_citing_files_include_every_kind():
    """The scan reaches each kind of file that cites tests today, so a new home for citations is not missed."""
    names = {str(p.relative_to(REPO)) for p in citing_files()}
    assert {"Makefile", "README.md", "pyproject.toml", ".ci/run", "docs/claims.md", "benchmarks/verdicts.py"} <= names
    assert any(n.startswith("sweeps/claims/") and n.endswith(".yaml") for n in names)
    assert "tests/system/test_docs_paths.py" not in names


@pytest.mark.parametrize(
    "text, dead",
    [
        ("see tests/test_layering.py and tests/system/test_layering.py", ["tests/test_layering.py"]),
        ("`tests/bench/test_nowhere.py` (`tests/bench/test_cli.py`)", ["tests/bench/test_nowhere.py"]),
        (
            "tests/models/test_knobs.py::test_no_such_test, "
            "tests/models/test_knobs.py::test_recurrent_width_depth_dropout_direction",
            ["tests/models/test_knobs.py::test_no_such_test"],
        ),
        ("the judge's tests (tests/sweeps/claims/test_judge*.py, tests/test_judge*.py)", ["tests/test_judge*.py"]),
        (
            "\t$(BIN)/python -m tests.test_layering || status=1; $(BIN)/python -m tests.system.test_layering",
            ["tests.test_layering"],
        ),
        ('"model.mixer=tests.probe_plugins:NoMixing", from tests.helpers import REPO', []),
    ],
)
def test_a_dead_test_citation_is_found(text, dead):
    """The check can fail: a citation of a test path, id, glob or module that does not exist is reported."""
    assert dead_test_citations(text) == dead


def _anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings, as GitHub and MkDocs' toc both make them."""
    heads = re.findall(r"^#{1,6} +(.+?) *$", _FENCE.sub("", path.read_text()), re.M)
    return {re.sub(r"[^\w\- ]", "", h.lower()).strip().replace(" ", "-") for h in heads}


def broken_links(path: Path) -> list[str]:
    """The relative links of Markdown file ``path`` whose file, or heading, does not exist."""
    broken = []
    for target in _LINK.findall(_FENCE.sub("", path.read_text())):
        if re.match(r"[a-z]+:", target):  # https:, mailto:: not ours to check offline
            continue
        name, _, anchor = target.partition("#")
        dest = (path.parent / name).resolve() if name else path
        if not dest.exists() or (anchor and dest.suffix == ".md" and anchor not in _anchors(dest)):
            broken.append(target)
    return broken


def test_every_relative_link_resolves():
    """Every relative link of the README and of the docs pages names a file that exists, and a heading of it
    when it names one (`make docs` checks the pages' links too, but not the README's)."""
    pages = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    broken = {str(p.relative_to(REPO)): b for p in pages if (b := broken_links(p))}
    assert not broken, f"links to nothing: {broken}"


def test_a_broken_link_is_found(tmp_path):
    (tmp_path / "a.md").write_text(
        "# Top\n\n## The table\n\n[ok](b.md#a-heading) [ok](#the-table) [web](https://x.org)\n"
    )
    (tmp_path / "b.md").write_text(
        "# B\n\n## A heading\n\n[gone](c.md) [no anchor](a.md#nowhere)\n```\n[code](x.md)\n```\n"
    )
    assert broken_links(tmp_path / "a.md") == []
    assert broken_links(tmp_path / "b.md") == ["c.md", "a.md#nowhere"]


def test_known_stale_names_are_still_there():
    """The allowance only shrinks: a fixed entry leaves KNOWN_STALE."""
    fixed = KNOWN_STALE - findings()
    assert not fixed, f"fixed: remove from KNOWN_STALE: {sorted(fixed)}"


@pytest.mark.parametrize(
    "text, stale",
    [
        ('"""FLOPs per token (see bench.flops)."""', ["bench.flops"]),
        ("# measured by seqbench.bench.training.cost.fig_cost", ["seqbench.bench.training.cost.fig_cost"]),
        (
            "the claims in sweeps/claims/no_such_claim.yaml and tests/test_nothing.py",
            ["sweeps/claims/no_such_claim.yaml", "tests/test_nothing.py"],
        ),
        (
            "bench.config.build_config, seqbench.load_model, sweeps/claims/postln_warmup.yaml, models/configs/NAME.py",
            [],
        ),
        ("bench.core.registry.MODELS, tests.helpers, seqbench.bench.x, `bench/x.py`", []),
    ],
)
def test_a_stale_name_is_found(text, stale):
    """The check can fail: an injected name of a module, attribute or file that does not exist is reported."""
    assert stale_names(text) == stale
