"""Operation-level options run as the first forward ran them: gradients identical.

An option keeps some values of a captured stage's forward and recomputes the others right
before the stage's backward (chainplan.graph.partial). Every kept set, not only the ones the
planner picks, must give the backward exactly the tensors a plain step saves. The plans
here are written by hand (store everything, one stage with an option keeping a given set),
so what is checked does not depend on measured times: the stages of a model with dropout
in every stage (the recomputation must draw the same masks, also when it skips a dropout
whose value was kept) and of a transformer (matrix products, attention, LayerNorm
statistics), over all their kept sets or a seeded sample where there are too many.
"""

from __future__ import annotations

import copy
import itertools
import random
from typing import Any

import pytest
import torch

from chainplan.graph.chain import extract
from chainplan.graph.options import structure_key
from chainplan.graph.stage import GraphStage
from chainplan.schedule import Op, Plan
from tests.graph.models import CASES, Case

MAX_SETS = 6  # kept sets checked per stage structure (all of them when there are fewer)


def _kept_sets(stage: GraphStage, x: torch.Tensor) -> list[tuple[int, ...]]:
    """Every kept set of the stage's operations, or a seeded sample of them."""
    pm = stage.pack_map(x)
    ops = [i for i, n in enumerate(pm.nodes) if n.op == "call_function"]
    if 2 ** len(ops) <= MAX_SETS:
        return [c for r in range(len(ops)) for c in itertools.combinations(ops, r)]
    rng = random.Random(len(ops))
    sets = {()}
    while len(sets) < MAX_SETS:
        sets.add(tuple(sorted(rng.sample(ops, rng.randint(1, len(ops) - 1)))))
    return sorted(sets)


def _plan(stages: int, k: int, keep: tuple[int, ...]) -> Plan:
    """Store everything, stage k with the option keeping ``keep``."""
    fwd = [Op("F_all", s, 1 if s == k else 0) for s in range(1, stages + 2)]
    bwd = [Op("B", s) for s in range(stages + 1, 0, -1)]
    return Plan("rotor-ops", 0.0, 0, 0, tuple(fwd + bwd), choices={k: keep})


def _step(net: torch.nn.Module, case: Case) -> torch.Tensor:
    torch.manual_seed(11)  # the same dropout masks in both runs
    loss = case.loss_fn(net(*case.args, **case.kwargs), case.target)
    loss.backward()
    return loss.detach()


def _reference(case: Case) -> tuple[torch.Tensor, list[torch.Tensor | None], Any, Any,
                                      list[torch.Tensor]]:
    """The plain step's loss and gradients (on a copy), the model's chain, its side values
    and each stage's input."""
    reference = copy.deepcopy(case.model.train())
    want = _step(reference, case)
    want_grads = [p.grad for p in reference.parameters()]
    chain = extract(case.model, case.args, case.kwargs)
    x, side = chain.bind(case.args, case.kwargs)
    inputs = []
    with torch.no_grad(), side.scope():
        for s in chain.stages:
            inputs.append(x)
            x = s(x)
    return want, want_grads, chain, side, inputs


@pytest.mark.parametrize(("name", "which"), [("mlp", ""), ("gpt", "blocks.0.")])
def test_every_kept_set_gives_the_plain_gradients(name: str, which: str) -> None:
    """``which``: the stages checked, by name (the GPT's: the two halves of a block)."""
    case = CASES[name]()
    model = case.model.train()
    want, want_grads, chain, side, inputs = _reference(case)
    checked, seen = 0, set()
    for k, (s, a) in enumerate(zip(chain.stages, inputs, strict=True), start=1):
        if not isinstance(s, GraphStage) or which not in s.stage_name:
            continue
        a = a.detach().requires_grad_(k > 1 and a.is_floating_point())  # as the executor runs it
        key = structure_key(s, a)
        if key in seen:  # identical blocks: one of them is enough
            continue
        seen.add(key)
        with side.scope():
            sets = _kept_sets(s, a)
        for keep in sets:
            model.zero_grad(set_to_none=True)
            got = _step(_plan(len(chain.stages), k, keep).wrap(model), case)
            assert torch.equal(got, want), (k, keep)
            for p, w in zip(model.parameters(), want_grads, strict=True):
                torch.testing.assert_close(p.grad, w, rtol=1e-5, atol=1e-6,
                                           msg=f"stage {k} ({s.stage_name}), keep {keep}")
            checked += 1
    assert checked >= 8 if name == "mlp" else checked >= 2 * MAX_SETS


def _recomputed_plan(stages: int, k: int, keep: tuple[int, ...]) -> Plan:
    """Stage k checkpointed (F_ck), then recomputed with the option keeping ``keep``
    right before its backward; every other stage stores everything."""
    fwd = [Op("F_ck" if s == k else "F_all", s) for s in range(1, stages + 2)]
    bwd = [op for s in range(stages + 1, 0, -1)
           for op in ([Op("F_all", s, 1), Op("B", s)] if s == k else [Op("B", s)])]
    return Plan("rotor-ops", 0.0, 0, 0, tuple(fwd + bwd), choices={k: keep})


@pytest.mark.parametrize("name", ["mlp", "llama"])
def test_a_recomputed_option_gives_the_plain_gradients(name: str) -> None:
    """The option's recomputation after an F_ck first forward: a_{k-1} is held detached
    there, and the option must still index the packs of a forward whose input needed a
    gradient (it once took a no-grad input's map: wrong tensors, or an error)."""
    case = CASES[name]()
    model = case.model.train()
    want, want_grads, chain, side, inputs = _reference(case)
    k = 3  # a stage whose input needs a gradient (the MLP's third layer, a Llama block)
    s = chain.stages[k - 1]
    assert isinstance(s, GraphStage)
    with side.scope():
        sets = _kept_sets(s, inputs[k - 1].detach().requires_grad_(True))
    for keep in sets[1:3]:
        model.zero_grad(set_to_none=True)
        got = _step(_recomputed_plan(len(chain.stages), k, keep).wrap(model), case)
        assert torch.equal(got, want), keep
        for p, w in zip(model.parameters(), want_grads, strict=True):
            torch.testing.assert_close(p.grad, w, rtol=1e-5, atol=1e-6,
                                       msg=f"stage {k} ({s.stage_name}), keep {keep}")


def test_a_recomputed_option_under_autocast() -> None:
    """Under bf16 autocast, an option recomputed in the backward (outside the user's
    autocast block) still indexes the packs of the first forward, which autocast made in
    bf16: its pack map is recorded under the forward's autocast state (it was recorded
    without it there: float32 tensors where the forward saved bf16, a ScheduleError)."""
    case = CASES["llama"]()
    model = case.model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want, want_grads, chain, side, inputs = _reference(case)
    k = 3
    # The kept sets from a copy's stage: the executor's stage must record its own pack map.
    with torch.autocast("cpu", dtype=torch.bfloat16):
        other = extract(copy.deepcopy(model), case.args, case.kwargs)
    s = other.stages[k - 1]
    assert isinstance(s, GraphStage) and s is not chain.stages[k - 1]
    with side.scope(), torch.autocast("cpu", dtype=torch.bfloat16):
        sets = _kept_sets(s, inputs[k - 1].detach().requires_grad_(True))
    for keep in sets[1:3]:
        model.zero_grad(set_to_none=True)
        net = _recomputed_plan(len(chain.stages), k, keep).wrap(model)
        torch.manual_seed(11)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss = case.loss_fn(net(*case.args, **case.kwargs), case.target)
        loss.backward()  # outside the autocast block, as a training loop runs it
        assert torch.equal(loss.detach(), want), keep
        for p, w in zip(model.parameters(), want_grads, strict=True):
            torch.testing.assert_close(p.grad, w, rtol=1e-5, atol=1e-6,
                                       msg=f"stage {k} ({s.stage_name}), keep {keep}")
