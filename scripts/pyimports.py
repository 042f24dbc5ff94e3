"""Import circles and deferred imports of the Python package (issue 22's measures).

Usage: ``python scripts/pyimports.py [PREFIX] [--runtime]`` from the repository root.

It reads ``python/chainplan`` as text (nothing is imported) and prints:

* each circle of modules whose names start with PREFIX (default ``chainplan``): a set of
  modules that import each other, module-level imports and imports under
  ``if TYPE_CHECKING:`` drawing the edges (``--runtime`` leaves the latter out: the
  circles Python meets when it loads the package);
* each deferred import statement of those modules: inside a function, or under
  ``TYPE_CHECKING``, with what it imports (``external`` for a package outside chainplan,
  such as torch).

A measure, not a test: the circles are not at 0 yet (docs/ARCHITECTURE.md, "The Python
package").
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "python" / "chainplan"


def _modules() -> dict[str, Path]:
    mods = {}
    for f in ROOT.rglob("*.py"):
        parts = f.relative_to(ROOT.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        mods[name] = f
    return mods


def _targets(mods: dict[str, Path], mod: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        parts = mod.split(".")
        if mods[mod].name != "__init__.py":
            parts = parts[:-1]
        parts = parts[:len(parts) - node.level + 1]
        base = ".".join(parts + ([node.module] if node.module else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]


def _resolve(mods: dict[str, Path], name: str) -> str | None:
    while name not in mods and "." in name:
        name = name.rsplit(".", 1)[0]
    return name if name in mods else None


def _scan(mods: dict[str, Path], runtime: bool) -> tuple[dict[str, set[str]], list[tuple]]:
    edges: dict[str, set[str]] = {m: set() for m in mods}
    deferred: dict[tuple[str, int], tuple[str, str, int, str]] = {}

    def walk(mod: str, node: ast.AST, in_function: bool, type_checking: bool) -> None:
        for child in ast.iter_child_nodes(node):
            tc = type_checking or (isinstance(child, ast.If)
                                   and "TYPE_CHECKING" in ast.unparse(child.test))
            fn = in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef)
            if isinstance(child, ast.Import | ast.ImportFrom):
                for name in _targets(mods, mod, child):
                    target = _resolve(mods, name)
                    if (fn or tc) and (mod, child.lineno) not in deferred:
                        where = "function" if fn else "TYPE_CHECKING"
                        deferred[(mod, child.lineno)] = (mod, where, child.lineno,
                                                         target or f"external {name}")
                    if target and not fn and not (tc and runtime):
                        edges[mod].add(target)
            walk(mod, child, fn, tc)

    for mod, path in mods.items():
        walk(mod, ast.parse(path.read_text()), False, False)
    return edges, sorted(deferred.values())


def _circles(edges: dict[str, set[str]]) -> list[list[str]]:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
                out.append(sorted(comp))

    sys.setrecursionlimit(10_000)
    for v in edges:
        if v not in index:
            visit(v)
    return out


def main(argv: list[str]) -> None:
    runtime = "--runtime" in argv
    args = [a for a in argv if a != "--runtime"]
    prefix = args[0] if args else "chainplan"
    mods = _modules()
    edges, deferred = _scan(mods, runtime)
    circles = [c for c in _circles(edges) if any(m.startswith(prefix) for m in c)]
    print(f"circles: {len(circles)}")
    for c in circles:
        print(f"  {len(c)} modules: {', '.join(c)}")
    mine = [d for d in deferred if d[0].startswith(prefix)]
    print(f"deferred imports: {len(mine)}")
    for mod, where, line, target in mine:
        print(f"  {mod}:{line} ({where}) {target}")


if __name__ == "__main__":
    main(sys.argv[1:])
