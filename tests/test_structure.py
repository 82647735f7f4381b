"""The structure of the package: imports among ordcore's modules run one way.

Every ``import`` statement of every module under ``python/ordcore`` counts, including the
ones inside functions (a lazy import still makes two modules depend on each other). The
implicit import of a parent package (``ordcore/__init__.py`` runs before any submodule) is
not an edge, as in import-linter.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "python" / "ordcore"


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """``{module: {ordcore modules it imports}}`` for every ``.py`` file of ``package``."""
    files = {_module_name(p, package): p for p in package.rglob("*.py")}
    compiled = {_module_name(p, package) for p in package.rglob("*.pyi")} - set(files)  # ordcore._core
    known = set(files) | compiled
    graph: dict[str, set[str]] = {name: set() for name in files}
    for name, path in files.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = name.split(".")
                    base = base[: len(base) - node.level + (1 if is_pkg else 0)]
                    module = ".".join(base + ([node.module] if node.module else []))
                else:
                    module = node.module or ""
                # `from pkg import sub` imports the submodule pkg.sub where there is one
                subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in known]
                targets = subs if len(subs) == len(node.names) else [module, *subs]
            for target in targets:
                while target and target not in known:
                    target = target.rpartition(".")[0]
                if target and target not in compiled and target != name:
                    graph[name].add(target)
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle of ``graph`` as ``[a, b, ..., a]``, or ``None``."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (cycle := visit(nxt)) is not None:
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (cycle := visit(node)) is not None:
            return cycle
    return None


def test_import_graph_has_no_cycles() -> None:
    graph = import_graph()
    assert "ordcore.cli" in graph and "ordcore.plugins" in graph  # the walk found the package
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


@pytest.mark.parametrize(
    ("edges", "has_cycle"),
    [({"a": {"b"}, "b": {"c"}, "c": set()}, False), ({"a": {"b"}, "b": {"a"}}, True),
     ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True)],  # fmt: skip
)
def test_find_cycle(edges: dict[str, set[str]], has_cycle: bool) -> None:
    assert (find_cycle(edges) is not None) == has_cycle


def test_import_graph_sees_lazy_imports(tmp_path: Path) -> None:
    pkg = tmp_path / "ordcore"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("def f():\n    from ordcore.b import g\n")
    (pkg / "b.py").write_text("from ordcore import a\n")
    (pkg / "c.py").write_text("from . import b\n")
    graph = import_graph(pkg)
    assert graph == {"ordcore": set(), "ordcore.a": {"ordcore.b"}, "ordcore.b": {"ordcore.a"},
                     "ordcore.c": {"ordcore.b"}}  # fmt: skip
    assert find_cycle(graph) == ["ordcore.a", "ordcore.b", "ordcore.a"]
