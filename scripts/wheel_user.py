"""What a user does first with a freshly installed chainplan wheel (`make wheel-check`).

Run by the fresh environment's interpreter, from a folder outside the repository, with Go
and the C compiler off PATH and no virtual environment active. It checks, failing loudly:
the package and its extension come from that environment; the `chainplan` script runs (the
CLI through the extension); a model is profiled and stored; the CLI and Python plan it; the
plan wraps the model and one training step gives the gradients of the plain model; MadPipe
plans the shipped vgg16 chain with its own schedule (the solver came with the install), the
same from the CLI and from Python; and a missing solver is seen.

Usage: python wheel_user.py VGG16_CHAIN_JSON
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path

import torch
from torch import nn

import chainplan
from chainplan.errors import MissingSolverError, MissingSolverWarning

SITE = Path(sysconfig.get_paths()["purelib"]).resolve()
SCRIPT = Path(sys.executable).parent / "chainplan"


def check(ok: bool, what: str) -> None:
    if not ok:
        sys.exit(f"wheel-check: FAILED: {what}")
    print(f"wheel-check: ok: {what}", flush=True)


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=env,
                          timeout=600)


def main() -> None:
    vgg16 = sys.argv[1]
    for tool in ("go", "gcc", "cc", "clang"):
        check(shutil.which(tool) is None, f"{tool} is not on PATH")
    check("VIRTUAL_ENV" not in os.environ, "no virtual environment is active")
    here = Path.cwd().resolve()
    check(not (here / "go.mod").exists() and not (here / ".venv").exists(),
          f"the working directory {here} is no checkout")
    pkg = Path(chainplan.__file__).resolve()
    check(pkg.is_relative_to(SITE), f"chainplan imports from the fresh environment ({pkg})")
    gocore = list((pkg.parent / "_gocore").glob("_gocore*.so"))
    check(len(gocore) == 1, f"the package has one Go extension ({[g.name for g in gocore]})")
    check(not (pkg.parent / "bin").exists(), "the package ships no second Go program")

    out = cli("--version")
    check(out.returncode == 0 and f"chainplan version {chainplan_version()}" in out.stdout,
          f"`chainplan --version` runs the CLI through the extension ({out.stdout.strip()})")

    # A profile, stored in $CHAINPLAN_DB, planned by Python and by the CLI.
    torch.manual_seed(0)
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.Conv2d(8, 8, 3, padding=1),
                          nn.ReLU(), nn.Flatten(), nn.Linear(8 * 16 * 16, 10))
    x, y = torch.randn(4, 3, 16, 16), torch.randint(0, 10, (4,))
    loss_fn = nn.CrossEntropyLoss()
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=2,
                             spread_warning=None)  # a shared machine: times spread
    check(prof.run_id is not None and Path(os.environ["CHAINPLAN_DB"]).exists(),
          f"the profile is stored (run {prof.run_id})")
    plan = chainplan.plan(prof, budget="min")
    out = cli("solve", "--run", str(prof.run_id), "--budget", "min")
    doc = json.loads(out.stdout) if out.returncode == 0 else {}
    check(doc.get("budget_bytes") == plan.budget_bytes
          and abs(doc.get("makespan", -1) - plan.makespan) <= 1e-9 * plan.makespan,
          f"the CLI and Python plan the stored profile alike (budget {plan.budget_bytes} B)")

    # One wrapped training step: the gradients of the plain model.
    net = plan.wrap(model)
    loss_fn(net(x), y).backward()
    wrapped = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad()
    loss_fn(model(x), y).backward()
    plain = [p.grad for p in model.parameters() if p.grad is not None]
    check(len(wrapped) == len(plain) and all(torch.allclose(a, b, atol=1e-6)
                                             for a, b in zip(wrapped, plain, strict=True)),
          "a step of the wrapped model gives the plain model's gradients")

    # MadPipe with the solver that came with the install: its own schedule, CLI = Python.
    ask = ["--chain", vgg16, "--gpus", "2", "--memory", "24GB", "--bandwidth", "12GB/s",
           "--weight-copies", "2", "--require-solver"]
    out = cli("pipeline", *ask)
    doc = json.loads(out.stdout) if out.returncode == 0 else {}
    check(doc.get("chosen") == "madpipe" and "fallback" not in doc,
          f"`chainplan pipeline` gives MadPipe's own plan (period {doc.get('period')}, "
          f"{out.stderr.strip()[-300:]})")
    with warnings.catch_warnings():
        warnings.simplefilter("error", MissingSolverWarning)
        pp = chainplan.pipeline.pipeline_plan(vgg16, gpus=2, memory="24GB", bandwidth="12GB/s",
                                              weight_copies=2, require_solver=True)
    check(pp.chosen == "madpipe" and abs(pp.period - doc["period"]) <= 1e-9 * doc["period"]
          and [(s.first, s.last, s.gpu) for s in pp.stages]
          == [(s["first"], s["last"], s["gpu"]) for s in doc["stages"]],
          f"pipeline_plan gives the CLI's plan (period {pp.period:.6g})")

    # Without the solver: a fallback the user sees, or an error when refused.
    gone = dict(os.environ, CHAINPLAN_HIGHS=str(Path.cwd() / "no-highs"))
    out = cli("pipeline", *ask[:-1], env=gone)
    doc = json.loads(out.stdout) if out.returncode == 0 else {}
    check(doc.get("fallback") == "no-milp-solver" and "warning" in out.stderr,
          "a missing solver: the CLI warns and marks the plan")
    out = cli("pipeline", *ask, env=gone)
    check(out.returncode == 2 and "pip install highsbox" in out.stderr,
          "a missing solver with --require-solver: exit 2 and the install hint")
    os.environ["CHAINPLAN_HIGHS"] = gone["CHAINPLAN_HIGHS"]
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        pp = chainplan.pipeline.pipeline_plan(vgg16, gpus=2, memory="24GB", bandwidth="12GB/s")
    check(pp.fallback == "no-milp-solver"
          and any(issubclass(w.category, MissingSolverWarning) for w in seen),
          "a missing solver: pipeline_plan warns and marks the plan")
    try:
        chainplan.pipeline.pipeline_plan(vgg16, gpus=2, memory="24GB", bandwidth="12GB/s",
                                         require_solver=True)
        refused = False
    except MissingSolverError:
        refused = True
    check(refused, "a missing solver with require_solver=True: MissingSolverError")
    print("wheel-check: every check passed")


def chainplan_version() -> str:
    from importlib.metadata import version
    return version("chainplan")


if __name__ == "__main__":
    main()
