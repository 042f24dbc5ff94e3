"""MadPipe's MILP solver comes with the installed package (chainplan._highs): the CLI and
Python give MadPipe's own plan from any directory, with or without a virtual environment
active; a missing solver is seen (a warning, a stderr line, ``fallback`` in the plan) and
``require_solver`` refuses it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

import chainplan
from chainplan import _highs
from chainplan.errors import MissingSolverError, MissingSolverWarning

ROOT = Path(__file__).resolve().parents[3]
VGG16 = str(ROOT / "examples" / "vgg16.json")
# vgg16 on two devices of 28 GB at 12 GB/s: MadPipe's own schedule (period 0.3407) beats
# the best contiguous plan (0.3761), the memory counting the operations' temporaries.
ASK = ["--chain", VGG16, "--gpus", "2", "--memory", "28GB", "--bandwidth", "12GB/s",
       "--weight-copies", "2"]
SCRIPT = Path(sys.executable).parent / "chainplan"


def user_env(**extra: str) -> dict[str, str]:
    """A shell with no virtual environment active and the environment's bin/ off PATH."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "CHAINPLAN_HIGHS", "PYTHONPATH")}
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if Path(p).resolve() != SCRIPT.parent.resolve())
    return {**env, **extra}


def cli(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), "pipeline", *args], capture_output=True, text=True,
                          cwd=cwd, env=user_env(**env), timeout=300)


def test_resolves_the_installed_highsbox(monkeypatch: pytest.MonkeyPatch) -> None:
    import highsbox

    monkeypatch.delenv("CHAINPLAN_HIGHS", raising=False)
    path, origin = _highs.resolve()
    assert path == highsbox.highs_bin_path() and "highsbox" in origin
    monkeypatch.setenv("CHAINPLAN_HIGHS", "/opt/highs")
    assert _highs.resolve() == ("/opt/highs", "CHAINPLAN_HIGHS")


def test_same_madpipe_plan_from_any_directory(tmp_path: Path) -> None:
    # The bug this fixes: outside the repository the CLI silently returned the contiguous
    # plan (issue 21, item 1) and Python did so without a word.
    out = cli(*ASK, "--require-solver", cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["chosen"] == "madpipe" and "fallback" not in doc, out.stderr
    code = ("import json, chainplan\n"
            f"pp = chainplan.pipeline.pipeline_plan({VGG16!r}, gpus=2, memory='28GB', "
            "bandwidth='12GB/s', weight_copies=2, require_solver=True)\n"
            "print(json.dumps(pp.raw))")
    py = subprocess.run([sys.executable, "-W", "error::UserWarning", "-c", code],
                        capture_output=True, text=True, cwd=tmp_path, env=user_env(),
                        timeout=300)
    assert py.returncode == 0, py.stderr
    got = json.loads(py.stdout)
    assert got["chosen"] == "madpipe"
    assert got["period"] == pytest.approx(doc["period"], rel=1e-9)
    assert got["stages"] == doc["stages"]


def test_missing_solver_is_seen_by_the_cli(tmp_path: Path) -> None:
    out = cli(*ASK, cwd=tmp_path, CHAINPLAN_HIGHS=str(tmp_path / "no-highs"))
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["fallback"] == "no-milp-solver"
    assert "chainplan: warning: no MILP solver was found" in out.stderr
    out = cli(*ASK, "--require-solver", cwd=tmp_path, CHAINPLAN_HIGHS=str(tmp_path / "no-highs"))
    assert out.returncode == 2 and out.stdout == ""
    assert "pip install highsbox" in out.stderr and str(tmp_path / "no-highs") in out.stderr


def test_missing_solver_is_seen_by_python(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    ask = {"gpus": 2, "memory": "28GB", "bandwidth": "12GB/s"}
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingSolverWarning)
        own = chainplan.pipeline.pipeline_plan(VGG16, **ask)
    assert own.chosen == "madpipe" and own.fallback == ""
    # The environment is read at each call: the Go side, loaded earlier, would not see it.
    monkeypatch.setenv("CHAINPLAN_HIGHS", str(tmp_path / "no-highs"))
    with pytest.warns(MissingSolverWarning, match="require_solver=True"):
        weak = chainplan.pipeline.pipeline_plan(VGG16, **ask)
    assert weak.fallback == "no-milp-solver" and weak.chosen == "contiguous"
    assert weak.period > own.period and weak.notes
    with pytest.raises(MissingSolverError, match="no-highs"):
        chainplan.pipeline.pipeline_plan(VGG16, require_solver=True, **ask)
    with pytest.raises(TypeError, match="require_solver"):
        chainplan.pipeline.pipeline_plan(VGG16, require_solver="yes", **ask)  # type: ignore[arg-type]
    monkeypatch.delenv("CHAINPLAN_HIGHS")
    assert chainplan.pipeline.pipeline_plan(VGG16, require_solver=True, **ask).period == own.period
