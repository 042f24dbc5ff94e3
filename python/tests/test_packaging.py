"""`pip install .` builds a wheel with the gopy extension and the CLI, and says clearly what
is missing when the Go toolchain is not there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def pip_wheel(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(out), str(ROOT)],
        capture_output=True, text=True, env=env, timeout=900)


def test_wheel_installs_and_runs(tmp_path: Path) -> None:
    res = pip_wheel(tmp_path / "dist", dict(os.environ))
    assert res.returncode == 0, res.stderr[-3000:]
    (wheel,) = (tmp_path / "dist").glob("chainplan-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("chainplan/_gocore/_gocore") and n.endswith(".so") for n in names)
    assert "chainplan/_gocore/pybind.py" in names
    assert "chainplan/bin/chainplan" in names
    assert "chainplan/executors/checkpoint.py" in names
    assert "chainplan/py.typed" in names

    target = tmp_path / "site"
    res = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q",
                          "--target", str(target), str(wheel)], capture_output=True, text=True)
    assert res.returncode == 0, res.stderr[-3000:]
    code = ("import chainplan._bind as b, chainplan._cli as c; "
            "print(b.parse_bytes('2GiB'), c.binary().exists())")
    env = dict(os.environ, PYTHONPATH=str(target))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert out.stdout.split() == ["2147483648", "True"], out.stderr
    exe = target / "chainplan" / "bin" / "chainplan"
    out = subprocess.run([str(exe), "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and "chainplan version 0.1.0" in out.stdout


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
