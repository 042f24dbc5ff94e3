"""The package's build and its ``chainplan`` script: the build says clearly what is missing
without the Go toolchain, and the script runs the CLI through the extension (one Go
runtime). `make wheel-check` (scripts/wheel_check.sh) installs the built wheel into a fresh
environment without Go or a C compiler and uses it."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

import chainplan

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(sys.executable).parent / "chainplan"


def pip_wheel(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        capture_output=True, text=True, env=env, timeout=900)


def test_script_runs_the_cli_through_the_extension(tmp_path: Path) -> None:
    pkg = Path(chainplan.__file__).parent
    assert not (pkg / "bin").exists(), "the package carries a second Go program"
    out = subprocess.run([str(SCRIPT), "--version"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.returncode == 0 and "chainplan version 0.1.0" in out.stdout, out.stderr
    out = subprocess.run([str(SCRIPT), "solve", "--budget", "1"], capture_output=True,
                         text=True, cwd=tmp_path)
    assert out.returncode == 2 and out.stderr.startswith("chainplan: "), out.stderr


def test_script_ends_quietly_on_a_closed_pipe(tmp_path: Path) -> None:
    # `chainplan ... | head -1`: the reader goes away; like any command-line program the
    # script ends by SIGPIPE, with no Python traceback and no "broken pipe" error.
    chain = ROOT / "examples" / "resnet50.json"
    proc = subprocess.Popen([str(SCRIPT), "frontier", "--chain", str(chain)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=tmp_path)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) in (0, -signal.SIGPIPE), err
    assert "Traceback" not in err and "broken pipe" not in err, err


def test_missing_go_is_named(tmp_path: Path) -> None:
    # A PATH with python but without go: the build must say what to install.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("gcc", "cc"):
        found = shutil.which(tool)
        if found:
            (bindir / tool).symlink_to(found)
    env = dict(os.environ, PATH=f"{bindir}:{Path(sys.executable).parent}")
    assert shutil.which("go", path=env["PATH"]) is None
    res = pip_wheel(tmp_path / "dist", env)
    assert res.returncode != 0
    assert "needs the Go toolchain" in res.stdout + res.stderr


@pytest.mark.parametrize("module", ["chainplan.schedule", "chainplan.offloading",
                                    "chainplan.errors", "chainplan.schema"])
def test_public_modules_declare_all(module: str) -> None:
    mod = __import__(module, fromlist=["__all__"])
    assert isinstance(mod.__all__, list) and mod.__all__


def test_version_is_the_distributions(monkeypatch: pytest.MonkeyPatch) -> None:
    """chainplan.__version__ (issue 33, item 9: it was missing) is pyproject.toml's version,
    as installed, which is also the one the Go side records with every plan; a source tree
    that pip never installed reads it from the Go side."""
    import importlib
    import importlib.metadata
    import re

    from chainplan import _bind, _version

    declared = re.search(r'(?m)^version = "([^"]+)"', (ROOT / "pyproject.toml").read_text())
    assert declared is not None
    assert chainplan.__version__ == declared[1] == _bind.version()
    assert "__version__" in dir(chainplan)

    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    try:
        assert importlib.reload(_version).__version__ == declared[1]
    finally:
        monkeypatch.undo()
        importlib.reload(_version)
