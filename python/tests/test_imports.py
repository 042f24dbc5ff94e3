"""The layering of the Python package (docs/ARCHITECTURE.md, "Python layers"), measured by
scripts/imports.py: no import circle, even through deferred imports; no module importing a
higher layer, except the named optional heavy paths; no private name imported across
modules; and the deferred imports of chainplan modules held to a ceiling that only goes
down (those left are listed in docs/ARCHITECTURE.md with why)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "chainplan"
# Modules with no deferred import at all.
CLEAN = ["offloading.py", "advice.py", "advicerecord.py", "layout3d.py", "plandoc.py", "ops.py",
         "svg.py", "profiler/document.py",
         "pipeline/document.py", "stages.py", "api.py", "checkpointed.py"]
# Deferred imports of chainplan modules: 95 before issue 22's layering, 27 after, 24 once
# the executors' dispatch loads at load time (the lazy façades' names, the compiled
# extension, the optional heavy paths; ARCHITECTURE.md), 25 with the façade's WithLoss (a
# public name, lazy as every other), 26 with parallelize (issue 34), 21 once the top level
# kept what a training script needs (issue 37: the families' names live in their
# namespaces). Lower it when one goes; raise it only for a façade name.
OWN_DEFERRED_CEILING = 21


def _measure(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "imports.py"), *args],
                          capture_output=True, text=True, check=False)


def _script() -> object:
    path = ROOT / "scripts" / "imports.py"
    spec = importlib.util.spec_from_file_location("imports_script", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_deferred_imports() -> None:
    out = _measure("--max-deferred", "0", *(str(PACKAGE / m) for m in CLEAN))
    assert out.returncode == 0, out.stdout + out.stderr
    assert f"deferred imports: 0 in {len(CLEAN)} files" in out.stdout


def test_layers_circles_and_ceilings() -> None:
    """The whole package: 0 circles (at load time and through deferred imports), no upward
    import, no private name across modules, and the deferred chainplan imports under the
    ceiling."""
    out = _measure("--own", "--max-circles", "0", "--max-deferred-circles", "0",
                   "--max-own-deferred", str(OWN_DEFERRED_CEILING))
    assert out.returncode == 0, out.stdout + out.stderr
    summary = out.stdout.splitlines()[-1]
    assert "import circles: 0 at load time, 0 through deferred imports" in summary
    assert "layer violations: 0" in summary
    assert "private names imported across modules: 0" in summary


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    pkg = tmp_path / "chainplan"
    for name, text in {"__init__.py": "", **files}.items():
        (pkg / name).parent.mkdir(parents=True, exist_ok=True)
        (pkg / name).write_text(text)
    return pkg


def test_a_deferred_import_is_found(tmp_path: Path) -> None:
    """The measure sees both kinds of deferred import and fails over its maximum."""
    pkg = _package(tmp_path, {
        "a.py": ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                 "    from chainplan import b\n"),
        "b.py": "def f():\n    from chainplan import a\n    return a\n"})
    out = _measure("--package", str(pkg), "--max-deferred", "1")
    assert out.returncode == 1
    assert "deferred imports: 2 in 3 files" in out.stdout
    assert "circle of 2 modules through deferred imports: chainplan.a, chainplan.b" in out.stdout
    out = _measure("--package", str(pkg), "--max-deferred-circles", "0")
    assert out.returncode == 1


def test_an_upward_import_names_both_modules(tmp_path: Path) -> None:
    """A base module importing the façade fails, naming both and their layers, whether the
    import is at load time or deferred; a module no layer names is reported too."""
    pkg = _package(tmp_path, {
        "errors.py": "def f():\n    from chainplan import api\n    return api\n",
        "jsonfields.py": "from chainplan.schedule import Plan\n",
        "schedule.py": "Plan = 1\n",
        "api.py": "", "newthing.py": ""})
    out = _measure("--package", str(pkg))
    assert out.returncode == 1
    assert ("layer: chainplan.errors (base) imports chainplan.api (facade), a higher layer, "
            "by a deferred import") in out.stdout
    assert ("layer: chainplan.jsonfields (base) imports chainplan.schedule (planning), a higher "
            "layer, by an import at load time") in out.stdout
    assert "layer: chainplan.newthing: in no layer" in out.stdout


def test_a_heavy_path_stays_deferred(tmp_path: Path) -> None:
    """Plan.wrap may import the executors inside the method, not at load time."""
    deferred = _package(tmp_path / "a", {
        "schedule.py": "def wrap():\n    from chainplan import executors\n    return executors\n",
        "executors/__init__.py": ""})
    assert "layer violations: 0" in _measure("--package", str(deferred)).stdout
    loaded = _package(tmp_path / "b", {
        "schedule.py": "from chainplan import executors\n", "executors/__init__.py": ""})
    out = _measure("--package", str(loaded))
    assert out.returncode == 1
    assert "chainplan.schedule (planning) imports chainplan.executors (executors)" in out.stdout


def test_a_package_is_loaded_before_its_modules(tmp_path: Path) -> None:
    """``from chainplan.runtime.side import S`` runs ``runtime/__init__.py`` first: what that
    loads at load time is needed too, and counts against the importer's layer (a model
    module reaching the executors through a package's ``__init__``); what the ``__init__``
    imports lazily (a deferred import) is not needed, and a module inside the package does
    not need its own package."""
    pkg = _package(tmp_path, {
        "runtime/__init__.py": "from chainplan.executors import view\n",
        "runtime/side.py": "from chainplan.runtime import other\n",
        "runtime/other.py": "",
        "executors/__init__.py": "def wrap():\n    from chainplan.graph import stage\n",
        "executors/view.py": "",
        "graph/__init__.py": "",
        "graph/stage.py": "from chainplan.runtime.side import S\n"})
    out = _measure("--package", str(pkg))
    assert out.returncode == 1
    assert ("layer: chainplan.graph.stage (models) imports chainplan.executors.view (executors), "
            "a higher layer, by an import at load time (the package chainplan.runtime, which it "
            "imports from, loads it)") in out.stdout
    assert ("layer: chainplan.runtime (runtime) imports chainplan.executors.view "
            "(executors)") in out.stdout
    # runtime.side's own package is loaded before it: not its import.
    assert "layer: chainplan.runtime.side " not in out.stdout
    lazy = _package(tmp_path / "lazy", {
        "runtime/__init__.py": "def f():\n    from chainplan.executors import view\n",
        "runtime/side.py": "", "executors/__init__.py": "", "executors/view.py": "",
        "graph/__init__.py": "", "graph/stage.py": "from chainplan.runtime.side import S\n"})
    out = _measure("--package", str(lazy))
    assert "chainplan.graph.stage" not in out.stdout, out.stdout


def test_a_private_name_across_modules_fails(tmp_path: Path) -> None:
    pkg = _package(tmp_path, {"api.py": "def _helper():\n    return 1\n",
                              "tradeoff.py": "from chainplan.api import _helper\n",
                              "errors.py": "from chainplan import _bind\n", "_bind.py": ""})
    out = _measure("--package", str(pkg))
    assert out.returncode == 1
    assert "private: chainplan.tradeoff imports chainplan.api._helper" in out.stdout
    assert "_bind" not in out.stdout.split("private:", 1)[1]  # a private module is no name


def test_the_guide_lists_the_layers() -> None:
    """docs/ARCHITECTURE.md's "Python layers" names every layer, in order, with every
    module or pattern of scripts/imports.py's LAYERS and every heavy path allowed."""
    script = _script()
    text = (ROOT / "docs" / "ARCHITECTURE.md").read_text()
    section = text.split("## Python layers", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")][1:]  # no header
    layers = script.LAYERS  # type: ignore[attr-defined]
    assert len(rows) == len(layers), rows
    for i, (row, (name, modules)) in enumerate(zip(rows, layers, strict=True)):
        assert row.startswith(f"| {i + 1} | {name} |"), (name, row)
        for m in modules:
            assert f"`{m}`" in row, (m, name)
    for importer, imported in script.HEAVY_UPWARD:  # type: ignore[attr-defined]
        assert f"`{importer}` → `{imported}`" in section, (importer, imported)


# The torch-free entry points (layers 1 to 4): reading a plan, a frontier, a pipeline plan
# or a stored profile's summary loads neither torch nor pyarrow (the Arrow codec,
# chainplan.schema, loads when a profile file is read or written).
LIGHT = ["chainplan", "chainplan.schedule", "chainplan.tradeoff", "chainplan.pipeline.plan",
         "chainplan.profiler.document", "chainplan.profilerow", "chainplan.simulating"]


def test_reading_plans_loads_neither_torch_nor_pyarrow() -> None:
    """Each module in a fresh interpreter, as a user's script would import it."""
    for module in LIGHT:
        code = (f"import sys, {module}\n"
                "heavy = sorted({'torch', 'pyarrow'} & set(sys.modules))\n"
                "assert not heavy, heavy")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=False, cwd=ROOT / "python")
        assert out.returncode == 0, f"import {module}: {out.stderr}"
