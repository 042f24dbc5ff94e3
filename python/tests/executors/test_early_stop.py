"""A recomputation right before a stage's backward runs only what the backward reads.

The checkpointing executor keeps the graph of the stage's first forward and, before its
backward, runs the stage again only until autograd has saved the last tensor the backward
reads (as PyTorch's non-reentrant checkpoint does). A stage ending in a ``Linear`` never
recomputes that ``Linear``: its saved tensors (its input) exist before it computes. The
stage-by-stage executor, which rebuilds the graph, runs the whole forward again.
"""

from __future__ import annotations

import copy
import json
from collections import Counter
from typing import Any

import torch
from torch import nn
from torch.utils._python_dispatch import TorchDispatchMode

from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.stepwise import StepwiseChain
from chainplan.schedule import Plan


class CountOps(TorchDispatchMode):
    """Counts the ATen operations run inside the block, by name."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: Counter[str] = Counter()

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        self.ops[func.overloadpacket.__name__] += 1
        return func(*args, **(kwargs or {}))


def chain() -> nn.Sequential:
    """Two stages, each a Linear | ReLU | Linear block: two matrix products per forward."""
    torch.manual_seed(0)
    return nn.Sequential(nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 16)),
                         nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 8)))


# Both stages keep nothing in the forward phase and are recomputed right before their
# backward (F_all k immediately followed by B k).
PLAN = Plan.from_json(json.dumps({"algo": "test", "sequence": [
    {"op": "F_ck", "stage": 1}, {"op": "F_ck", "stage": 2}, {"op": "F_all", "stage": 3},
    {"op": "B", "stage": 3}, {"op": "F_all", "stage": 2}, {"op": "B", "stage": 2},
    {"op": "F_all", "stage": 1}, {"op": "B", "stage": 1}]}))


def backward_ops(net: nn.Module, x: torch.Tensor) -> Counter[str]:
    """The operations run during the backward of one step (recomputations included)."""
    loss = net(x).square().sum()
    with CountOps() as count:
        loss.backward()
    return count.ops


def test_recomputation_stops_at_the_saved_tensors() -> None:
    x = torch.randn(4, 16)
    forward = CountOps()
    with forward, torch.no_grad():
        chain()(x)
    assert forward.ops["addmm"] == 4  # a full forward: two products per stage

    model = chain()
    early = backward_ops(CheckpointedChain(list(model), PLAN), x)
    whole = backward_ops(StepwiseChain(list(chain()), PLAN), x)
    ref = chain()
    plain = backward_ops(ref, x)
    # A backward runs mm (weight and input gradients), never addmm, the forward's product.
    # Each stage recomputes its first Linear (whose output the ReLU saves) and stops
    # before the second, whose input is already saved.
    assert plain["addmm"] == 0, plain
    assert early["addmm"] == 2, early
    assert whole["addmm"] == 4, whole  # the stage-by-stage executor reruns every forward
    assert early["mm"] == plain["mm"]

    # And the gradients are the plain model's.
    for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, msg=name)


def test_a_stage_saving_nothing_recomputes_nothing() -> None:
    """A stage whose backward reads no saved tensor (a scaling) costs no recomputation."""
    x = torch.randn(4, 16, requires_grad=True)

    class Scale(nn.Module):
        def forward(self, t: torch.Tensor) -> torch.Tensor:
            return t * 2.0

    model = nn.Sequential(Scale(), nn.Linear(16, 8))
    ref = copy.deepcopy(model)
    ops = backward_ops(CheckpointedChain(list(model), PLAN), x)
    plain = backward_ops(ref, x)
    # The same multiplications as the plain backward (the loss's and the scaling's own),
    # and no recomputed one; the Linear stops before its product too.
    assert ops["mul"] == plain["mul"] and ops["addmm"] == 0, (ops, plain)
    for (name, a), b in zip(ref.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, msg=name)
