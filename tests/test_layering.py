"""The house rules of the import graph, read from the source (every import statement, including the
ones inside functions and ``TYPE_CHECKING`` blocks):

- no import cycles anywhere (no two modules import each other, directly or through others, lazily or not);
- models never import tasks and tasks never import models: what they share is in ``bench.contract``;
- the leaves (contract, schema, registry, errors, artifacts, provenance) import only other leaves, so a
  model, a task or a report reader can use them without pulling in the harness.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# source folder -> the package it installs as (pyproject's package-dir)
ROOTS = {"seqbench": "seqbench", "bench": "seqbench.bench", "tasks": "seqbench.tasks",
         "models": "seqbench.models", "sweeps": "seqbench.sweeps", "reports": "seqbench.reports"}
LEAVES = {f"seqbench.bench.{m}" for m in ("contract", "schema", "registry", "errors", "artifacts", "provenance", "diagnostics_format")}
# Edges that another helper's open work removes; each names the change that retires it.
KNOWN: set[tuple[str, str]] = set()  # (importer, imported) edges allowed despite the rules: none today


def module_files() -> dict[str, Path]:
    out = {}
    for folder, package in ROOTS.items():
        for path in sorted((REPO / folder).rglob("*.py")):
            parts = list(path.relative_to(REPO / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([package, *parts])] = path
    return out


def _resolve(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def imports_of(module: str, path: Path, known: set[str]) -> set[str]:
    """Our modules that ``module`` imports (``from pkg import name`` counts as pkg.name when that is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(node, module, path.name == "__init__.py")
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in known else target for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in known:  # `import seqbench.bench.x.attr` -> the module part
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def import_graph() -> dict[str, set[str]]:
    files = module_files()
    return {m: imports_of(m, p, set(files)) for m, p in files.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as one cycle path."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    comps: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                comps.append(_path(graph, set(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return comps


def _path(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """One cycle through a strongly connected component: a -> b -> ... -> a."""
    start = min(comp)
    prev: dict[str, str] = {}
    frontier = [start]
    while frontier:  # breadth-first back to start, inside the component
        nxt = []
        for v in frontier:
            for w in sorted(graph[v] & comp):
                if w == start:
                    path = [v]
                    while path[-1] != start:
                        path.append(prev[path[-1]])
                    return [start, *reversed(path[:-1]), start]
                if w not in prev:
                    prev[w] = v
                    nxt.append(w)
        frontier = nxt
    return sorted(comp)


def without_known(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {t for t in targets if (m, t) not in KNOWN} for m, targets in graph.items()}


def test_the_graph_sees_lazy_and_relative_imports(tmp_path):
    g = import_graph()
    assert "seqbench.bench.contract" in g["seqbench.tasks.base"]
    assert "seqbench.bench.train" in g["seqbench.bench.cli"]  # imported inside cmd_run
    assert "seqbench.tasks.synthetic.copy" in g["seqbench.tasks.synthetic"]  # `from pkg import copy`
    f = tmp_path / "m.py"
    f.write_text("def f():\n    from . import b\n    from .c import x\n")
    assert imports_of("p.m", f, {"p", "p.m", "p.b", "p.c"}) == {"p.b", "p.c"}


def test_cycle_finder_reports_the_loop():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c", "a"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles():
    found = cycles(without_known(import_graph()))
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_known_exceptions_are_still_real():
    """An entry in KNOWN whose edge is gone must be removed (so the list never hides a new edge)."""
    g = import_graph()
    stale = [e for e in KNOWN if e[1] not in g.get(e[0], set())]
    assert not stale, f"remove from KNOWN: {stale}"


@pytest.mark.parametrize("a, b", [("models", "tasks"), ("tasks", "models")])
def test_models_and_tasks_never_import_each_other(a, b):
    bad = [(m, t) for m, targets in import_graph().items() if m.startswith(f"seqbench.{a}")
           for t in targets if t.startswith(f"seqbench.{b}")]
    assert not bad, f"{a} -> {b}: {bad} (share types through seqbench.bench.contract)"


def test_leaves_import_only_leaves():
    g = import_graph()
    bad = {m: sorted(g[m] - LEAVES) for m in LEAVES if g[m] - LEAVES}
    assert not bad, f"leaf modules import the harness: {bad}"
