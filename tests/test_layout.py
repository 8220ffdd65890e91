"""The package layout: no import circle at run time, and no import of a higher layer.

The layer order is read from docs/design/README.md ("Layer order"), so the document and
this test cannot drift apart. Imports are read from each module's syntax tree: those under
`if TYPE_CHECKING:` never run and do not count; imports inside functions do.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("gazette_core", "gazctl", "spark_jobs")
LAYER_DOC = ROOT / "docs" / "design" / "README.md"


@dataclass(frozen=True)
class Edge:
    """One run-time import: `source` runs `target`, at `line` of the source."""

    source: str
    target: str
    line: int


def modules(root: Path = ROOT) -> dict[str, Path]:
    """Every module of the checked packages by dotted name (a package by its own name)."""
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Import statements that can run: all but the body of `if TYPE_CHECKING:`."""
    for child in ast.iter_child_nodes(tree):
        if isinstance(child, ast.If) and _is_type_checking(child):
            for statement in child.orelse:
                yield from _run_time_imports(ast.Module(body=[statement], type_ignores=[]))
            continue
        if isinstance(child, ast.Import | ast.ImportFrom):
            yield child
        yield from _run_time_imports(child)


def _deepest(name: str, known: dict[str, Path]) -> str | None:
    """The longest known module that `name` is or lies inside."""
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def _targets(
    module: str, is_package: bool, node: ast.Import | ast.ImportFrom, known: dict[str, Path]
) -> Iterator[str]:
    if isinstance(node, ast.Import):
        for alias in node.names:
            if found := _deepest(alias.name, known):
                yield found
        return
    base = node.module or ""
    if node.level:
        package = module if is_package else module.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    for alias in node.names:
        # `from pkg import mod` imports the submodule; `from mod import name` the module.
        found = _deepest(f"{base}.{alias.name}", known) if f"{base}.{alias.name}" in known else None
        if found := found or _deepest(base, known):
            yield found


def _is_ancestor(package: str, module: str) -> bool:
    return module.startswith(package + ".")


def imports(known: dict[str, Path] | None = None) -> list[Edge]:
    """Every run-time import between checked modules, without self and ancestor imports."""
    known = known if known is not None else modules()
    edges: set[Edge] = set()
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in _run_time_imports(tree):
            for target in _targets(module, path.name == "__init__.py", node, known):
                if target != module and not _is_ancestor(target, module):
                    edges.add(Edge(module, target, node.lineno))
    return sorted(edges, key=lambda e: (e.source, e.target, e.line))


def run_graph(edges: list[Edge], known: dict[str, Path]) -> dict[str, set[str]]:
    """Who runs whom: an import of `a.b.c` also runs the packages `a` and `a.b`."""
    graph: dict[str, set[str]] = {module: set() for module in known}
    for edge in edges:
        parts = edge.target.split(".")
        for i in range(1, len(parts) + 1):
            runs = ".".join(parts[:i])
            if runs in known and runs != edge.source and not _is_ancestor(runs, edge.source):
                graph[edge.source].add(runs)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, successors = work[-1]
            nxt = next(successors, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


_LAYER_ROW = re.compile(r"^\|\s*(\d+)\s*\|(.*)\|")


def layer_table(text: str) -> dict[str, int]:
    """Package prefix -> layer, from the table of the "Layer order" section of the doc."""
    section = text.split("## Layer order", 1)[1].split("\n## ", 1)[0]
    table: dict[str, int] = {}
    for line in section.splitlines():
        row = _LAYER_ROW.match(line.strip())
        if row is None:
            continue
        first_cell = row.group(2).split("|", 1)[0]
        for prefix in re.findall(r"`([\w.]+)`", first_cell):
            assert prefix not in table, f"{prefix} is listed twice in the layer order"
            table[prefix] = int(row.group(1))
    return table


def layer_of(module: str, table: dict[str, int]) -> tuple[str, int] | None:
    """The most specific prefix of `module` in `table`, and its layer."""
    name = module
    while name:
        if name in table:
            return name, table[name]
        name = name.rpartition(".")[0]
    return None


def _describe(circle: list[str], edges: list[Edge]) -> str:
    members = set(circle)
    inside = [
        f"    {e.source}:{e.line} -> {e.target}"
        for e in edges
        if e.source in members and e.target in members
    ]
    return f"  {len(circle)} modules: {', '.join(circle)}\n" + "\n".join(inside)


def test_no_import_circle_at_run_time() -> None:
    known = modules()
    edges = imports(known)
    found = circles(run_graph(edges, known))
    assert not found, "import circles at run time:\n" + "\n".join(
        _describe(circle, edges) for circle in found
    )


def test_every_module_has_a_layer() -> None:
    table = layer_table(LAYER_DOC.read_text(encoding="utf-8"))
    missing = sorted(m for m in modules() if layer_of(m, table) is None)
    assert not missing, f"modules with no layer in {LAYER_DOC.name}: {missing}"


def test_every_layer_prefix_names_a_module() -> None:
    known = modules()
    table = layer_table(LAYER_DOC.read_text(encoding="utf-8"))
    stale = sorted(prefix for prefix in table if prefix not in known)
    assert not stale, f"layer order names modules that do not exist: {stale}"


def test_no_module_imports_a_higher_layer() -> None:
    table = layer_table(LAYER_DOC.read_text(encoding="utf-8"))
    upward = []
    for edge in imports():
        source, target = layer_of(edge.source, table), layer_of(edge.target, table)
        if source is None or target is None or target[1] <= source[1]:
            continue
        upward.append(
            f"  {edge.source}:{edge.line} (layer {source[1]}, {source[0]}) imports "
            f"{edge.target} (layer {target[1]}, {target[0]})"
        )
    assert not upward, "imports of a higher layer:\n" + "\n".join(upward)


# --- the walk itself, on a small tree ---------------------------------------


def _tree(tmp: Path, files: dict[str, str]) -> dict[str, Path]:
    for name, text in files.items():
        path = tmp / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return {
        name.removesuffix(".py").removesuffix("/__init__").replace("/", "."): tmp / name
        for name in files
    }


def test_the_walk_counts_function_imports_but_not_type_checking(tmp_path: Path) -> None:
    known = _tree(
        tmp_path,
        {
            "p/__init__.py": "",
            "p/a.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from p import b\n",
            "p/b.py": "def f():\n    from . import a\n",
            "p/c.py": "import p.a\nfrom p.b import f\nfrom p import c\n",
        },
    )
    edges = {(e.source, e.target) for e in imports(known)}
    assert edges == {("p.b", "p.a"), ("p.c", "p.a"), ("p.c", "p.b")}
    assert circles(run_graph(imports(known), known)) == []


def test_the_walk_finds_a_circle_and_resolves_relative_imports(tmp_path: Path) -> None:
    known = _tree(
        tmp_path,
        {
            "p/__init__.py": "from p import r\n",
            "p/r.py": "from p.q import x\n",
            "p/q/__init__.py": "",
            "p/q/x.py": "from ..s import name\n",
            "p/s.py": "import p.r\n",
        },
    )
    edges = imports(known)
    assert {(e.source, e.target) for e in edges} == {
        ("p", "p.r"),
        ("p.r", "p.q.x"),
        ("p.q.x", "p.s"),
        ("p.s", "p.r"),
    }
    graph = run_graph(edges, known)
    assert graph["p.r"] == {"p.q", "p.q.x"}  # importing p.q.x runs its package p.q too
    assert circles(graph) == [["p.q.x", "p.r", "p.s"]]


def test_layers_take_the_most_specific_prefix() -> None:
    table = layer_table(
        "## Layer order\n\n| Layer | Packages | What |\n|---|---|---|\n"
        "| 0 | `a.x`, `a.y` | base |\n| 3 | `a` | the rest |\n\n## Next\n| 9 | `z` | no |\n"
    )
    assert table == {"a.x": 0, "a.y": 0, "a": 3}
    assert layer_of("a.x.deep", table) == ("a.x", 0)
    assert layer_of("a.other", table) == ("a", 3)
    assert layer_of("b", table) is None
