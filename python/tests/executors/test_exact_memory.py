"""The exact memory model changes the plan, and the plan measures what it predicts.

A CNN cut at every layer (Conv | BatchNorm | ReLU) has stages that save neither their
output (a convolution, a BatchNorm) nor their input (a ReLU): the BatchNorm output goes as
soon as the ReLU has run. Read as version 1 (every stage keeps its input and output to its
backward), the chain over-counts the plain step by a quarter, and a budget of the plain
step's measured peak forces recomputations; read exactly (chainplan.chain/v2, what the
profiler measures), the plan at that budget recomputes nothing and runs in its budget.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

import chainplan
from chainplan.tradeoff import chain_json
from tests.executors.test_memory_promise import measured

V2_FIELDS = ("saves_input", "saves_output", "recompute_time", "recompute_tmp_bytes", "options")


def flat_cnn() -> nn.Sequential:
    def block(cin: int, cout: int) -> list[nn.Module]:
        return [nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU()]

    return nn.Sequential(*block(3, 8), *block(8, 8), nn.MaxPool2d(2), *block(8, 16),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(16 * 8 * 8, 10))


def version1(doc: str, path: Path) -> Path:
    """The chain without the exact model: what a version 1 profile would give."""
    chain = json.loads(doc)
    assert chain["format"] == "chainplan.chain/v2"
    chain["format"] = "chainplan.chain/v1"
    for s in chain["stages"]:
        for f in V2_FIELDS:
            s.pop(f, None)
    path.write_text(json.dumps(chain))
    return path


def test_exact_model_changes_the_plan(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = flat_cnn()
    x, y, loss_fn = torch.randn(8, 3, 32, 32), torch.randint(0, 10, (8,)), nn.CrossEntropyLoss()
    plain = measured(model, x, loss_fn, y)
    model.zero_grad(set_to_none=True)
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=1, warmup=1,
                             progress=False, spread_warning=None)
    budget = int(plain * 1.01)
    exact = chainplan.plan(prof, budget=budget)
    v1 = chainplan.plan(version1(chain_json(prof, "test"), tmp_path / "v1.json"),
                        budget=budget)
    stages = len(model)
    store_all = 2 * (stages + 1)  # F_all 1..L+1 and B L+1..1: nothing recomputed
    assert len(exact.sequence) == store_all, exact
    assert len(v1.sequence) > store_all, v1  # version 1 must recompute to fit
    assert exact.makespan < v1.makespan
    got = measured(exact.wrap(model), x, loss_fn, y)
    assert got <= 1.02 * budget, (got, budget)
    assert abs(got - exact.peak_bytes) <= 0.05 * exact.peak_bytes, (got, exact.peak_bytes)
    # The version 1 plan runs too, under its (over-estimated) prediction.
    model.zero_grad(set_to_none=True)
    assert measured(v1.wrap(model), x, loss_fn, y) <= v1.peak_bytes
