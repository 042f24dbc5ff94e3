"""The layering of the modules issue 22 has cleaned so far: no import inside a function or
under TYPE_CHECKING in the typed offloading plan and the parallel planners' results, and
no import circle among them, even through deferred imports (scripts/imports.py measures
the whole package)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "python" / "chainplan"
# parallel.py's one deferred import is the torch-side Profile class, for its annotations
# only (importing it would import torch): an optional heavy dependency.
CLEAN = ["offloading.py", "advice.py", "advicerecord.py", "layout3d.py"]


def _measure(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(ROOT / "scripts" / "imports.py"), *args],
                          capture_output=True, text=True, check=False)


def test_no_deferred_imports() -> None:
    out = _measure("--max-deferred", "0", *(str(PACKAGE / m) for m in CLEAN))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "deferred imports: 0 in 4 files" in out.stdout


def test_no_circle_through_these_modules() -> None:
    out = _measure(str(PACKAGE / "offloading.py"))
    assert out.returncode == 0, out.stderr
    assert "import circles: 0 at load time" in out.stdout
    names = {f"chainplan.{m.removesuffix('.py')}" for m in CLEAN}
    for line in out.stdout.splitlines():
        if line.startswith("circle of"):
            members = set(line.split(": ", 1)[1].split(", "))
            assert not members & names, line


def test_a_deferred_import_is_found(tmp_path: Path) -> None:
    """The measure sees both kinds of deferred import and fails over its maximum."""
    pkg = tmp_path / "chainplan"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                              "    from chainplan import b\n")
    (pkg / "b.py").write_text("def f():\n    from chainplan import a\n    return a\n")
    out = _measure("--package", str(pkg), "--max-deferred", "1")
    assert out.returncode == 1
    assert "deferred imports: 2 in 3 files" in out.stdout
    assert "circle of 2 modules through deferred imports: chainplan.a, chainplan.b" in out.stdout
