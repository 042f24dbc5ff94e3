"""Extracted chains train as the plain model: every algorithm (rotor, revolve, sequential,
store-all, and the offloading pofo and DYNPROG) gives the plain model's loss and gradients
(parameters and side arguments), updates BatchNorm statistics once per step, and replays
dropout's random numbers in its recomputations."""

from __future__ import annotations

import json
from typing import Any

import pytest
import torch

from chainplan import _bind
from chainplan.executors import CheckpointedChain, OffloadedChain
from chainplan.graph.chain import ExtractedChain, extract
from chainplan.schedule import Plan
from tests.graph.models import CASES, Case
from tests.planning import plan_chain


def synthetic_chain(chain: ExtractedChain, case: Case) -> str:
    """A chain with the stages' real output sizes (ā = 3a), so that the plans at different
    budgets use every kind of operation."""
    x, side = chain.bind(case.args, case.kwargs)
    doc: dict[str, Any] = {"format": "chainplan.chain/v1", "input_bytes": x.nbytes,
                           "stages": []}
    with torch.no_grad(), side.scope():
        for i, stage in enumerate(chain.stages):
            x = stage(x)
            doc["stages"].append({"name": f"s{i + 1}", "fwd_time": 1.0, "bwd_time": 2.0,
                                  "out_bytes": x.nbytes, "saved_bytes": 3 * x.nbytes,
                                  "fwd_tmp_bytes": 0, "bwd_tmp_bytes": 0})
    return json.dumps(doc)


def plans_for(chain: str) -> list[Plan]:
    lo = _bind.min_budget({"chain": chain}, {"algo": "rotor"})
    hi = _bind.min_budget({"chain": chain}, {"algo": "store-all"})
    # The offloading plans on a coarse grid (50 slots): their searches are the slow part.
    offl = {"bandwidth": json.loads(chain)["input_bytes"], "slots": 50}
    lo_pofo = _bind.min_budget({"chain": chain}, {"algo": "pofo", **offl})
    requests = [{"algo": "rotor", "budget_bytes": lo},
                {"algo": "rotor", "budget_bytes": (lo + hi) // 2},
                {"algo": "revolve", "budget_bytes": hi},
                {"algo": "sequential", "budget_bytes": hi},
                {"algo": "store-all", "budget_bytes": hi},
                {"algo": "pofo", "budget_bytes": lo_pofo, **offl},
                {"algo": "offload", "budget_bytes": (lo_pofo + hi) // 2, **offl}]
    return [Plan.from_json(plan_chain(chain, r)) for r in requests]


def step(net: Any, case: Case, seed: int) -> torch.Tensor:
    torch.manual_seed(seed)
    loss = case.loss_fn(net(*case.args, **case.kwargs), case.target)
    loss.backward()
    return loss.detach()


def grads(case: Case) -> list[torch.Tensor | None]:
    side = [v for v in case.kwargs.values() if isinstance(v, torch.Tensor)]
    return [p.grad for p in case.model.parameters()] + [v.grad for v in side]


def _calling(chain: ExtractedChain, executor: CheckpointedChain) -> Any:
    """The executor called as the model: the prelude, then the chain."""

    def run(*args: Any, **kwargs: Any) -> torch.Tensor:
        x, side = chain.bind(args, kwargs)
        out: torch.Tensor = executor(x, side)
        return out

    return run


@pytest.mark.filterwarnings("ignore::chainplan.graph.chain.BranchWarning")  # the U-Net's
@pytest.mark.parametrize("name", sorted(CASES))
def test_every_algorithm_trains_as_the_plain_model(name: str) -> None:
    case = CASES[name]()
    if name == "mlp":
        case.kwargs["scale"].requires_grad_(True)  # a side argument that needs a gradient
    model = case.model.train()
    start = {k: v.clone() for k, v in model.state_dict().items()}
    want_loss = step(model, case, seed=1)
    want = [g.clone() if g is not None else None for g in grads(case)]
    want_state = {k: v.clone() for k, v in model.state_dict().items()}
    chain = extract(model, case.args, case.kwargs)
    plans = plans_for(synthetic_chain(chain, case))
    assert {"F_all", "F_ck", "B"} <= {op.kind for p in plans for op in p.sequence}
    for p in plans:
        model.load_state_dict(start)
        model.zero_grad(set_to_none=True)
        for v in case.kwargs.values():
            if isinstance(v, torch.Tensor):
                v.grad = None
        executor = (OffloadedChain if p.offload is not None else CheckpointedChain)(
            chain.stages, p)
        run = _calling(chain, executor)
        what = f"{name} {p.algo} at {p.budget_bytes} B"
        assert torch.equal(step(run, case, seed=1), want_loss), what
        for got, ref in zip(grads(case), want, strict=True):
            assert (got is None) == (ref is None), what
            if ref is not None:
                assert got is not None
                torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-6, msg=what)
        for k, v in model.state_dict().items():  # BatchNorm statistics: updated once
            torch.testing.assert_close(v, want_state[k], rtol=0, atol=0, msg=f"{what}: {k}")
