"""Measure how the Python package is layered: deferred imports, import circles and layers.

A deferred import is one inside a function or under ``if TYPE_CHECKING:``; an import circle
is a set of modules that import each other at load time (module-level imports of
``chainplan`` modules, deferred ones left out), found as the strongly connected components
of that graph; the circles "through deferred imports" count those edges too.

The layers (:data:`LAYERS`, docs/ARCHITECTURE.md "Python layers") order the modules: a
module imports, at load time or deferred, modules of its own layer or lower ones only,
except the optional heavy paths of :data:`HEAVY_UPWARD`.

    python scripts/imports.py [--own] [--max-deferred N] [--max-own-deferred N]
                              [--max-circles N] [--max-deferred-circles N] [FILE ...]

With FILEs, the deferred imports are counted in those files only; the circles and the
layers are always those of the whole package. ``--own`` lists only the deferred imports of
chainplan modules. Exits 1 when a count is over its maximum or a module imports upward
(python/tests/test_imports.py runs it so).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "python" / "chainplan"

#: The layers, lowest first: (name, modules). A name ending in ``.*`` stands for every
#: module under that package not named elsewhere; an exact name wins over a pattern, a
#: longer pattern over a shorter one.
LAYERS: list[tuple[str, tuple[str, ...]]] = [
    ("base", ("chainplan._lazy", "chainplan._moved", "chainplan._highs", "chainplan.errors",
              "chainplan.jsonfields", "chainplan.profilerow", "chainplan.schema", "chainplan.svg",
              "chainplan.ops",
              "chainplan._gocore", "chainplan._gocore.*")),
    ("bindings", ("chainplan._bind", "chainplan._cli", "chainplan._version", "chainplan.source")),
    ("documents", ("chainplan.offloading", "chainplan.towerplan", "chainplan.plandoc",
                   "chainplan.simulation", "chainplan.layout3d", "chainplan.advicerecord",
                   "chainplan.advice", "chainplan.algorithms", "chainplan.pipeline.parts",
                   "chainplan.pipeline.document", "chainplan.profiler.summary",
                   "chainplan.profiler.spread", "chainplan.profiler.document",
                   "chainplan.graph.describe", "chainplan.launch.candidate")),
    ("planning", ("chainplan.arguments", "chainplan.tradeoff", "chainplan.schedule",
                  "chainplan.history", "chainplan.parallel", "chainplan.simulating",
                  "chainplan.pipeline.plan", "chainplan.pipeline.requests",
                  "chainplan.pipeline.planning", "chainplan.shardchain",
                  "chainplan.rankchains", "chainplan.rankpeak", "chainplan.rankmemory")),
    ("runtime", ("chainplan.runtime", "chainplan.runtime.*")),
    ("models", ("chainplan.graph", "chainplan.graph.*", "chainplan.profiler",
                "chainplan.profiler.*", "chainplan.towers", "chainplan.towers.*",
                "chainplan.sequential", "chainplan.gradrelease", "chainplan.reuse",
                "chainplan.shapecheck", "chainplan.withloss")),
    ("executors", ("chainplan.executors", "chainplan.executors.*", "chainplan.graph.executor",
                   "chainplan.towers.executor", "chainplan.pipeline.*")),
    ("facade", ("chainplan", "chainplan.api", "chainplan.callkind", "chainplan.checkpointed",
                "chainplan.checkpointedplans",
                "chainplan.stages", "chainplan.pipeline", "chainplan.launch", "chainplan.launch.*",
                "chainplan.sharded", "chainplan.agreed")),
]

#: The upward imports allowed, each deferred, each an optional heavy path (torch): a
#: torch-free document or argument that runs or measures only when asked.
HEAVY_UPWARD: dict[tuple[str, str], str] = {
    ("chainplan.schedule", "chainplan.executors"): "Plan.wrap runs the executors (torch)",
    ("chainplan.pipeline.plan", "chainplan.pipeline.runner"):
        "PipelinePlan.runner and .run build the torch runner",
    ("chainplan.pipeline.plan", "chainplan.pipeline.measure"):
        "PipelinePlan.run's annotations name the torch measurement",
    ("chainplan.arguments", "chainplan.profiler.bandwidth"):
        "bandwidth='auto' with nothing recorded measures the link with torch",
}


#: Private names one module still imports from another, each with why it is left.
PRIVATE_LEFT: dict[tuple[str, str], str] = {}


def layer_of(module: str) -> int:
    """The index in :data:`LAYERS` of ``module``'s layer, -1 when no layer names it."""
    best, best_len = -1, -1
    for i, (_, names) in enumerate(LAYERS):
        for n in names:
            if n == module:
                return i
            if n.endswith(".*") and module.startswith(n[:-1]) and len(n) > best_len:
                best, best_len = i, len(n)
    return best


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
    """The modules of files an import statement names and needs loaded: ``from pkg import
    sub`` of submodules needs them; what it needs of pkg's ``__init__`` is
    :func:`_parents`'s."""
    targets = [t for t in _targets(stmt, module, is_package) if t in files]
    if isinstance(stmt, ast.ImportFrom) and targets:
        base, subs = targets[0], targets[1:]
        if len(subs) == len(stmt.names) and base not in subs:
            return set(subs)
    return set(targets)


def _parents(targets: set[str], module: str, is_package: bool, files: set[str]) -> set[str]:
    """The packages Python runs the ``__init__`` of before it loads targets (``from
    pkg.sub import x`` runs ``pkg/__init__.py`` first), but those the importer is itself
    inside (loaded before it) and the root ``chainplan``, the lazy façade."""
    own = module if is_package else module.rpartition(".")[0]
    out = set()
    for t in targets:
        parts = t.split(".")
        for i in range(2, len(parts) + 1):
            pkg = ".".join(parts[:i])
            if pkg != t and pkg in files and not (own == pkg or own.startswith(pkg + ".")):
                out.add(pkg)
    return out


def _package_loads(files: dict[str, Path]) -> dict[str, set[str]]:
    """What each package's ``__init__`` imports at load time: what a module importing one
    of its submodules from outside needs loaded besides that submodule."""
    out: dict[str, set[str]] = {}
    for m, p in files.items():
        if p.name != "__init__.py":
            continue
        out[m] = set()
        for stmt, d in _imports(ast.parse(p.read_text(), str(p))):
            if not d:
                out[m] |= _needs(stmt, m, True, set(files)) - {m}
    return out


def _all_needs(files: dict[str, Path], with_deferred: bool = True, inline: bool = True
               ) -> dict[tuple[str, str], tuple[bool, str]]:
    """Every module one chainplan module needs loaded to load (or, with deferred imports,
    to run): (importer, needed) -> (whether every import making the edge is deferred, the
    package whose ``__init__`` loads it, "" when the importer names it). inline: a package
    run first stands for what its ``__init__`` loads (its deferred imports, a lazy
    façade's, are not needed); else the package itself is needed, as for the circles at
    load time, where its edges are its load-time imports."""
    loads = _package_loads(files)
    out: dict[tuple[str, str], tuple[bool, str]] = {}
    for m, p in files.items():
        is_package = p.name == "__init__.py"
        for stmt, d in _imports(ast.parse(p.read_text(), str(p))):
            if d and not with_deferred:
                continue
            named = _needs(stmt, m, is_package, set(files))
            found = [(t, "") for t in named]
            for pkg in sorted(_parents(named, m, is_package, set(files))):
                found += [(t, pkg) for t in loads[pkg]] if inline else [(pkg, pkg)]
            for t, via in found:
                if t == m:
                    continue
                was_d, was_via = out.get((m, t), (True, via))
                out[(m, t)] = (was_d and d, was_via if not was_d else via)
    return out


def deferred(paths: list[Path], package: Path, own: bool = False) -> list[str]:
    """The deferred imports of paths; own: only those of chainplan modules."""
    found = []
    for p in paths:
        for stmt, d in _imports(ast.parse(p.read_text(), str(p))):
            if d and (not own or _targets(stmt, module_name(p, package), p.name == "__init__.py")):
                found.append(f"{p}:{stmt.lineno}: {ast.unparse(stmt)}")
    return found


def edges(package: Path) -> dict[tuple[str, str], tuple[bool, str]]:
    """Every module one chainplan module needs: (importer, needed) -> (whether all the
    imports making the edge are deferred, the package whose ``__init__`` loads it or "")."""
    files = {module_name(p, package): p for p in package.rglob("*.py")}
    return _all_needs(files)


def private_imports(package: Path) -> list[tuple[str, str]]:
    """(importer, module.name) for every private name (``_x``, not a module) a chainplan
    module imports from another chainplan module."""
    files = {module_name(p, package): p for p in package.rglob("*.py")}
    out = []
    for m, p in files.items():
        if m.startswith("chainplan._gocore"):
            continue  # generated by gopy: it loads its own compiled module
        for stmt, _ in _imports(ast.parse(p.read_text(), str(p))):
            if not isinstance(stmt, ast.ImportFrom):
                continue
            targets = _targets(stmt, m, p.name == "__init__.py")
            if not targets:
                continue
            base = targets[0]
            for a in stmt.names:
                full = f"{base}.{a.name}"
                if a.name.startswith("_") and not a.name.startswith("__") \
                        and full not in files and base != m:
                    out.append((m, full))
    return sorted(out)


def layer_problems(package: Path) -> list[str]:
    """Modules no layer names, and imports of a higher layer (at load time or deferred)
    other than the deferred ones of :data:`HEAVY_UPWARD`."""
    files = sorted(module_name(p, package) for p in package.rglob("*.py"))
    out = [f"{m}: in no layer (name it in LAYERS, scripts/imports.py, and in "
           f"docs/ARCHITECTURE.md)" for m in files if layer_of(m) < 0]
    for (m, t), (deferred_only, via) in sorted(edges(package).items()):
        lm, lt = layer_of(m), layer_of(t)
        if lm < 0 or lt <= lm:
            continue
        if deferred_only and (m, t) in HEAVY_UPWARD:
            continue
        how = "a deferred import" if deferred_only else "an import at load time"
        through = f" (the package {via}, which it imports from, loads it)" if via else ""
        out.append(f"{m} ({LAYERS[lm][0]}) imports {t} ({LAYERS[lt][0]}), a higher layer, "
                   f"by {how}{through}")
    return out


def circles(package: Path, with_deferred: bool = False) -> list[list[str]]:
    """The import circles at load time, or, with_deferred, those the deferred imports
    close too (what a module needs to work, not just to load)."""
    files = {module_name(p, package): p for p in package.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in files}
    for (m, t) in _all_needs(files, with_deferred, inline=with_deferred):
        # The package's own __init__ is the façade that re-exports everything:
        # an edge to it is not a layer's dependency.
        if t != "chainplan":
            graph[m].add(t)
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
    ap.add_argument("--own", action="store_true",
                    help="list only the deferred imports of chainplan modules")
    ap.add_argument("--max-deferred", type=int, default=-1)
    ap.add_argument("--max-own-deferred", type=int, default=-1,
                    help="most deferred imports of chainplan modules")
    ap.add_argument("--max-circles", type=int, default=-1)
    ap.add_argument("--max-deferred-circles", type=int, default=-1,
                    help="most circles through deferred imports")
    ap.add_argument("--package", type=Path, default=PACKAGE,
                    help="the chainplan package folder (default: this checkout's)")
    args = ap.parse_args()
    package = args.package.resolve()
    paths = args.files or sorted(package.rglob("*.py"))
    d = deferred(paths, package)
    c = circles(package)
    cd = circles(package, with_deferred=True)
    own = deferred(paths, package, own=True)
    for line in own if args.own else d:
        print(line)
    for comp in cd:
        print(f"circle of {len(comp)} modules through deferred imports: {', '.join(comp)}")
    layers = layer_problems(package)
    for line in layers:
        print(f"layer: {line}")
    private = [pi for pi in private_imports(package) if pi not in PRIVATE_LEFT]
    for m, name in private:
        print(f"private: {m} imports {name}: give it a public name in the right layer")
    print(f"deferred imports: {len(d)} in {len(paths)} files ({len(own)} of chainplan "
          f"modules); import circles: {len(c)} at load time, "
          f"{len(cd)} through deferred imports; layer violations: {len(layers)}; private names "
          f"imported across modules: {len(private)} (+{len(PRIVATE_LEFT)} left, named)")
    over = ((0 <= args.max_deferred < len(d)) or (0 <= args.max_own_deferred < len(own))
            or (0 <= args.max_circles < len(c)) or (0 <= args.max_deferred_circles < len(cd)))
    return 1 if over or layers or private else 0


if __name__ == "__main__":
    sys.exit(main())
