"""chainplan's main job, end to end on the CPU: profile a small real CNN, store the profile,
plan at three budgets, train with each plan, check the gradients, and compare predicted
with measured peak memory and step time.

Run it through `make demo` (which builds the package first), or directly in the project's
environment: `.venv/bin/python examples/train_demo.py`. The database is $CHAINPLAN_DB.
"""

from __future__ import annotations

import copy
import os
import sys

import torch
from torch import nn

import chainplan


def block(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False),
                         nn.BatchNorm2d(cout), nn.ReLU())


class Residual(nn.Module):
    """A ResNet basic block: one stage of the chain, with its branch inside."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.body = nn.Sequential(block(c, c), nn.Conv2d(c, c, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


def small_cnn() -> nn.Sequential:
    """A ResNet-like CNN for 32×32 images: 20 stages once nested Sequentials are flattened."""
    return nn.Sequential(
        block(3, 16), *[Residual(16) for _ in range(4)],
        block(16, 32, stride=2), *[Residual(32) for _ in range(3)],
        block(32, 64, stride=2), Residual(64),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10),
    )


def mib(n: float) -> str:
    return f"{n / 2**20:8.2f}"


def main() -> int:
    torch.manual_seed(0)
    # One thread: timings stay steady even when other work shares the cores.
    torch.set_num_threads(1)
    model = small_cnn()
    x = torch.randn(32, 3, 32, 32)
    y = torch.randint(0, 10, (32,))
    loss_fn = nn.CrossEntropyLoss()
    print(f"chainplan demo: a {len(list(model.children()))}-module CNN, batch {tuple(x.shape)}, "
          f"torch {torch.__version__} on the CPU, database {os.environ.get('CHAINPLAN_DB')}")

    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=5, warmup=2)
    print(f"profiled {prof.num_stages} stages in {prof.seconds:.1f} s -> run {prof.run_id} "
          f"({prof.path.name})")

    top = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    low = chainplan.plan(prof, budget="min").budget_bytes
    budgets = [("store-all peak", top), ("half", max(top // 2, low)), ("smallest", low)]

    ref = copy.deepcopy(model)
    loss_fn(ref(x), y).backward()
    ok = True
    print(f"\n{'budget':>16} {'MiB':>8} {'pred peak':>9} {'meas peak':>9} "
          f"{'pred step ms':>12} {'meas step ms':>12}  gradients")
    for label, budget in budgets:
        plan = chainplan.plan(prof, budget=budget)
        trained = copy.deepcopy(model)
        net = plan.wrap(trained)
        loss_fn(net(x), y).backward()
        same = all(torch.allclose(a.grad, b.grad, rtol=1e-4, atol=1e-5)
                   for a, b in zip(ref.parameters(), trained.parameters(), strict=True)
                   if a.grad is not None and b.grad is not None)
        ok &= same
        opt = torch.optim.SGD(trained.parameters(), lr=0.01)
        for _ in range(3):  # a few training steps with the plan
            opt.step()
            opt.zero_grad()
            loss_fn(net(x), y).backward()
        trained.zero_grad(set_to_none=True)
        ex = chainplan.measure(net, x, loss_fn=loss_fn, target=y, steps=3)
        print(f"{label:>16} {mib(budget)} {mib(plan.peak_bytes):>9} {mib(ex.peak_bytes):>9} "
              f"{1e3 * plan.makespan:12.2f} {1e3 * ex.step_time_s:12.2f}  "
              f"{'same as plain' if same else 'DIFFERENT'}")
    a_last = next(r.out_bytes for r in reversed(prof.rows) if r.stage_kind == "stage")
    print("\npredicted step time: the sum of the profiled stage times; measured: one training "
          "step of the\nwrapped model. Measured peaks exceed the prediction by the chain "
          f"output's gradient ({a_last} B),\nwhich autograd holds until the executor's "
          "backward returns (docs/executors.md).")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
