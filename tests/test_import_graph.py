"""Beleg's packages import each other without cycles at module level.

The graph is read from the source with :mod:`ast`: every ``import``/``from … import`` that
runs when a module is imported (module body and class bodies, including ``try`` and
``if`` blocks), not those inside functions (deferred on purpose) or under
``if TYPE_CHECKING:`` (never run). A node is a top-level package or module under
``beleg`` (``beleg.answer``, ``beleg.kb`` …); an edge A → B means some module of A
imports a module of B when it is imported. Issue 12 asks for ``kb ⇄ answer ⇄ strategies``
and ``index ⇄ ingest`` to be free of cycles; the test holds every package to that and
prints each cycle with the imports that make it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def import_time_statements(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements that run when this body runs, skipping function bodies and
    ``if TYPE_CHECKING:`` blocks (their ``else`` does run)."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _is_type_checking(node.test):
                yield from import_time_statements(node.body)
            yield from import_time_statements(node.orelse)
        elif isinstance(node, ast.ClassDef):
            yield from import_time_statements(node.body)
        elif isinstance(node, (ast.Try, ast.With)):
            for block in ("body", "handlers", "orelse", "finalbody"):
                for part in getattr(node, block, []):
                    yield from import_time_statements(part.body if isinstance(part, ast.ExceptHandler) else [part])


def imported_modules(source: str, name: str, is_package: bool, modules: set[str]) -> Iterator[tuple[str, int]]:
    """``(module, line)`` for each beleg module that module ``name`` (whose text is ``source``)
    imports at import time; ``modules`` are the names of all of beleg's modules."""
    package = name if is_package else name.rpartition(".")[0]
    for node in import_time_statements(ast.parse(source).body):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        else:
            base = node.module or ""
            if node.level:  # relative: from . import x / from ..y import z
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            # "from pkg import mod" imports pkg.mod when that is a module, else a name of pkg.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        for target in targets:
            if target == "beleg" or target.startswith("beleg."):
                yield target, node.lineno


#: Backends that implement the ports on top of the core, as a separately installed plugin
#: would: each is a node of its own, not part of the package it sits in (STYLE.md puts
#: store backends in a ``stores/`` package of their own; ``index/postgres`` is not moved yet).
BACKEND_NODES = ("beleg.index.postgres",)


def node_of(module: str) -> str:
    """The top-level package or module under beleg that ``module`` belongs to (or its backend)."""
    for backend in BACKEND_NODES:
        if module == backend or module.startswith(backend + "."):
            return backend
    return ".".join(module.split(".")[:2])


def package_graph() -> dict[str, dict[str, list[str]]]:
    """node → imported node → the imports that make the edge (``module:line -> module``)."""
    files = sorted((SRC / "beleg").rglob("*.py"))
    modules = {module_name(f) for f in files}
    graph: dict[str, dict[str, list[str]]] = {}
    for path in files:
        importer = module_name(path)
        source = path.read_text(encoding="utf-8")
        for target, line in imported_modules(source, importer, path.name == "__init__.py", modules):
            a, b = node_of(importer), node_of(target)
            if a != b:
                graph.setdefault(a, {}).setdefault(b, []).append(f"{importer}:{line} -> {target}")
    return graph


def cycles_through(graph: dict[str, dict[str, list[str]]], nodes: tuple[str, ...]) -> list[list[str]]:
    """Every simple cycle (as a node list, smallest node first) that passes through one of ``nodes``."""
    found: set[tuple[str, ...]] = set()

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in graph.get(node, {}):
            if nxt == start:
                found.add(tuple(path))
            elif nxt not in path and nxt > start:  # each cycle once, from its smallest node
                walk(start, nxt, [*path, nxt])

    for start in sorted(graph):
        walk(start, start, [start])
    return sorted([list(c) for c in found if any(n in nodes for n in c)], key=lambda c: (len(c), c))


def describe(graph: dict[str, dict[str, list[str]]], cycle: list[str]) -> str:
    hops = zip(cycle, [*cycle[1:], cycle[0]])
    return " -> ".join(cycle + [cycle[0]]) + "\n" + "\n".join(f"    {graph[a][b][0]}" for a, b in hops)


def test_the_graph_reader_sees_module_level_imports_only() -> None:
    # A small package checks what counts: module body, class body, try/if blocks; not
    # function bodies or TYPE_CHECKING blocks.
    source = (
        "from __future__ import annotations\n"
        "from typing import TYPE_CHECKING\n"
        "import beleg.index.filters\n"
        "from beleg.types import Hit\n"
        "from beleg import errors\n"
        "try:\n    from beleg.answer import markup\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    from beleg.kb import KnowledgeBase\nelse:\n    from beleg.query import dates\n"
        "class A:\n    from beleg.retrieve import fusion\n"
        "def f():\n    from beleg.strategies import base\n"
    )
    modules = {"beleg.errors", "beleg.answer.markup", "beleg.query.dates", "beleg.retrieve.fusion"}
    got = sorted(target for target, _ in imported_modules(source, "beleg.probe", False, modules))
    assert got == ["beleg.answer.markup", "beleg.errors", "beleg.index.filters", "beleg.query.dates",
                   "beleg.retrieve.fusion", "beleg.types"]


def test_the_cycle_finder_reports_each_cycle_once() -> None:
    graph = {"a": {"b": ["a:1 -> b"]}, "b": {"c": ["b:1 -> c"], "a": ["b:2 -> a"]}, "c": {"a": ["c:1 -> a"]},
             "d": {"a": ["d:1 -> a"]}}
    assert cycles_through(graph, ("b",)) == [["a", "b"], ["a", "b", "c"]]
    assert cycles_through(graph, ("d",)) == []


def test_no_two_packages_import_each_other_even_through_others() -> None:
    graph = package_graph()
    assert {"beleg.kb", "beleg.answer", "beleg.strategies", "beleg.index", "beleg.ingest"} <= set(graph)
    cycles = cycles_through(graph, tuple(graph))
    assert not cycles, "module-level import cycles:\n" + "\n".join(describe(graph, c) for c in cycles)
