#!/usr/bin/env python3
"""The package import graph of live_swe and godel, read with ``ast``; fails on a cycle.

A node is a package (``live_swe.agent``, ``godel``) or a top-level module of ``live_swe``
(``live_swe.runner``). Every import counts: at module level and inside functions ("lazy"), since a
lazy import hides a cycle without removing it. The check fails (exit 1) when

- packages import each other in a cycle, or
- a ``live_swe`` package other than the command line (``live_swe.cli``, the application shell that
  puts the layers together) imports ``godel``: the Gödel engine builds on the kernel, never under it.

``python scripts/import_graph.py`` prints the graph (``[lazy: …]`` marks edges only made inside
functions) and the verdict; ``--quiet`` prints the verdict only. Run from any directory.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROOTS = ("live_swe", "godel")
# May import godel: the command line assembles every layer.
SHELL = "live_swe.cli"


def node_of(module: str) -> str | None:
    """The graph node a dotted module name belongs to; None outside live_swe/godel."""
    parts = module.split(".")
    if parts[0] == "godel":
        return "godel"
    if parts[0] != "live_swe":
        return None
    if len(parts) == 1:
        return "live_swe"
    return f"live_swe.{parts[1]}"


def _module_name(path: Path, root: Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imported(node: ast.AST, module: str, is_package: bool) -> list[str]:
    """Dotted names an import statement names, relative imports resolved against ``module``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if not isinstance(node, ast.ImportFrom):
        return []
    if node.level == 0:
        base = node.module or ""
    else:
        package = module.split(".") if is_package else module.split(".")[:-1]
        package = package[: len(package) - (node.level - 1)]
        base = ".".join(package + ([node.module] if node.module else []))
    # `from . import x` and `from live_swe import events` may name submodules
    return [base] + [f"{base}.{alias.name}" for alias in node.names]


def _is_module(root: Path, name: str) -> bool:
    """A module or package of the scanned tree, or a third-party one (not a name inside a module)."""
    parts = name.split(".")
    if parts[0] not in ROOTS:
        return True
    path = root.joinpath(*parts)
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def build(root: Path = ROOT) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """(module-level edges, function-local edges) between nodes."""
    top: dict[str, set[str]] = defaultdict(set)
    lazy: dict[str, set[str]] = defaultdict(set)
    for package in ROOTS:
        for path in sorted((root / package).rglob("*.py")):
            module = _module_name(path, root)
            source = node_of(module)
            tree = ast.parse(path.read_text(), filename=str(path))
            top_level = {id(statement) for statement in tree.body}
            # `if TYPE_CHECKING:` blocks at module level are typing only, but still count as top.
            for statement in tree.body:
                if isinstance(statement, ast.If | ast.Try):
                    top_level.update(id(n) for n in ast.walk(statement))
            for node in ast.walk(tree):
                for name in _imported(node, module, path.name == "__init__.py"):
                    if not _is_module(root, name):  # `from live_swe import __version__`: a name, no module
                        continue
                    target = node_of(name)
                    if target and target not in (source, "live_swe"):
                        (top if id(node) in top_level else lazy)[source].add(target)
    for source in list(lazy):
        lazy[source] -= top[source]
    return top, lazy


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def problems(top: dict[str, set[str]], lazy: dict[str, set[str]]) -> list[str]:
    edges = {node: top[node] | lazy[node] for node in set(top) | set(lazy)}
    found = [f"import cycle between packages: {' <-> '.join(c)}" for c in cycles(edges)]
    for source, targets in sorted(edges.items()):
        if "godel" in targets and source.startswith("live_swe") and source != SHELL:
            found.append(f"{source} imports godel: the kernel must not depend on the Gödel engine")
    return found


def render(top: dict[str, set[str]], lazy: dict[str, set[str]]) -> str:
    lines = []
    for source in sorted(set(top) | set(lazy)):
        line = f"{source:24} -> {', '.join(sorted(top[source]))}"
        if lazy[source]:
            line += f"   [lazy: {', '.join(sorted(lazy[source]))}]"
        lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quiet", action="store_true", help="print the verdict only")
    args = parser.parse_args(argv)
    top, lazy = build()
    if not args.quiet:
        print(render(top, lazy))
    found = problems(top, lazy)
    for problem in found:
        print(f"import graph: {problem}", file=sys.stderr)
    if not found:
        print("import graph: no cycle between packages; live_swe does not import godel")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
