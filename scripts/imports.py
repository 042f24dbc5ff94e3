"""Measure how the Python package is layered: deferred imports and import circles.

A deferred import is one inside a function or under ``if TYPE_CHECKING:``; an import circle
is a set of modules that import each other at load time (module-level imports of
``chainplan`` modules, deferred ones left out), found as the strongly connected components
of that graph.

    python scripts/imports.py [--max-deferred N] [--max-circles N] [FILE ...]

With FILEs, the deferred imports are counted in those files only; the circles are always
those of the whole package. Exits 1 when a count is over its maximum (the test that keeps
the offloading and advice modules at 0 runs it so, python/tests/test_imports.py).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "chainplan"


def module_name(path: Path, package: Path) -> str:
    rel = path.resolve().relative_to(package.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(tree: ast.AST) -> list[tuple[ast.stmt, bool]]:
    """Every import statement with whether it is deferred."""
    out: list[tuple[ast.stmt, bool]] = []

    def walk(node: ast.AST, deferred: bool) -> None:
        for child in ast.iter_child_nodes(node):
            d = deferred or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef))
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                d = True
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                out.append((child, d))
            walk(child, d)

    walk(tree, False)
    return out


def _targets(stmt: ast.stmt, module: str, is_package: bool) -> list[str]:
    """The chainplan modules an import statement loads."""
    if isinstance(stmt, ast.Import):
        return [a.name for a in stmt.names if a.name.split(".")[0] == "chainplan"]
    assert isinstance(stmt, ast.ImportFrom)
    base = stmt.module or ""
    if stmt.level:
        parts = module.split(".")
        if not is_package:
            parts = parts[:-1]
        parts = parts[:len(parts) - stmt.level + 1]
        base = ".".join(parts + ([base] if base else []))
    if base.split(".")[0] != "chainplan":
        return []
    return [base] + [f"{base}.{a.name}" for a in stmt.names]


def _needs(stmt: ast.stmt, module: str, is_package: bool, files: set[str]) -> set[str]:
    """The modules of files an import statement needs loaded: ``from pkg import sub``
    of submodules only needs them, not pkg's own code (which may be loading)."""
    targets = [t for t in _targets(stmt, module, is_package) if t in files]
    if isinstance(stmt, ast.ImportFrom) and targets:
        base, subs = targets[0], targets[1:]
        if len(subs) == len(stmt.names) and base not in subs:
            return set(subs)
    return set(targets)


def deferred(paths: list[Path], package: Path, own: bool = False) -> list[str]:
    """The deferred imports of paths; own: only those of chainplan modules."""
    found = []
    for p in paths:
        for stmt, d in _imports(ast.parse(p.read_text(), str(p))):
            if d and (not own or _targets(stmt, module_name(p, package), p.name == "__init__.py")):
                found.append(f"{p}:{stmt.lineno}: {ast.unparse(stmt)}")
    return found


def circles(package: Path, with_deferred: bool = False) -> list[list[str]]:
    """The import circles at load time, or, with_deferred, those the deferred imports
    close too (what a module needs to work, not just to load)."""
    files = {module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for m, p in files.items():
        for stmt, d in _imports(ast.parse(p.read_text(), str(p))):
            if with_deferred or not d:
                # The package's own __init__ is the façade that re-exports everything:
                # an edge to it is not a layer's dependency.
                graph[m] |= _needs(stmt, m, p.name == "__init__.py", set(files)) - {m, "chainplan"}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="*", type=Path)
    ap.add_argument("--max-deferred", type=int, default=-1)
    ap.add_argument("--max-circles", type=int, default=-1)
    ap.add_argument("--package", type=Path, default=PACKAGE,
                    help="the chainplan package folder (default: this checkout's)")
    args = ap.parse_args()
    package = args.package.resolve()
    paths = args.files or sorted(package.rglob("*.py"))
    d = deferred(paths, package)
    c = circles(package)
    cd = circles(package, with_deferred=True)
    for line in d:
        print(line)
    for comp in cd:
        print(f"circle of {len(comp)} modules through deferred imports: {', '.join(comp)}")
    own = deferred(paths, package, own=True)
    print(f"deferred imports: {len(d)} in {len(paths)} files ({len(own)} of chainplan "
          f"modules); import circles: {len(c)} at load time, "
          f"{len(cd)} through deferred imports")
    over = (0 <= args.max_deferred < len(d)) or (0 <= args.max_circles < len(c))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
