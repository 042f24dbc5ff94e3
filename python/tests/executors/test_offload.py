"""The offloading executor runs pofo schedules transparently and really frees memory.

The plans are real plans of the Go planners (planner/offload through ``chainplan._bind``:
POFO, DYNPROG (``offload``), GREEDY) for the synthetic chains of the test models
(``test_transparency.synthetic_chain``), with a link bandwidth of one mean activation per
unit of forward time, so that transfers take about as long as the computations they overlap.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable
from typing import Any

import pytest
import torch

from chainplan import _bind
from chainplan.errors import ScheduleError
from chainplan.executors import CheckpointedChain, OffloadedChain, planned, wrap
from chainplan.executors.linkplan import LinkPlan
from chainplan.executors.offload import OffloadRunner
from chainplan.schedule import Plan
from chainplan.stages import flatten_stages
from tests.executors.test_transparency import step, synthetic_chain
from tests.models import MODELS
from tests.planning import plan_chain

ALGOS = {"pofo": "pofo", "dynprog": "offload", "greedy": "greedy"}


@functools.cache
def _entries(model: str) -> str:
    torch.manual_seed(0)
    m, x = MODELS[model]()
    chain = synthetic_chain(flatten_stages(m), x)
    doc = json.loads(chain)
    beta = sum(s["out_bytes"] for s in doc["stages"]) / len(doc["stages"])
    lo = _bind.min_budget({"chain": chain}, {"algo": "pofo", "bandwidth": beta})
    hi = _bind.min_budget({"chain": chain}, {"algo": "store-all"})
    want = [("pofo", lo), ("pofo", lo + (hi - lo) // 4), ("pofo", lo + (hi - lo) // 2)]
    for b in (lo + (hi - lo) // 2, lo + 3 * (hi - lo) // 4):
        want += [("dynprog", b), ("greedy", b)]
    out = []
    for algo, b in want:
        req = {"algo": ALGOS[algo], "budget_bytes": b, "bandwidth": beta}
        out.append({"model": model, "algo": algo, "budget_bytes": b,
                    "plan": json.loads(plan_chain(chain, req))})
    return json.dumps(out)


def fixtures(model: str) -> list[dict[str, Any]]:
    """POFO plans at the smallest budget and a quarter and half way to the store-all peak;
    DYNPROG and GREEDY plans half and three quarters of the way (fresh copies)."""
    entries: list[dict[str, Any]] = json.loads(_entries(model))
    return entries


def plan_of(entry: dict[str, Any]) -> Plan:
    return Plan.from_json(json.dumps(entry["plan"]))


def find(model: str, algo: str) -> Plan:
    return plan_of(next(e for e in fixtures(model) if e["algo"] == algo))


def test_plans_offload_both_kinds() -> None:
    """POFO offloads plain a_ℓ and ā_ℓ; DYNPROG and GREEDY ā_ℓ."""
    kinds = {(e["algo"], t["tensor"].startswith("abar"))
             for name in MODELS for e in fixtures(name) for t in e["plan"]["offload"]["transfers"]}
    assert {("pofo", False), ("pofo", True), ("dynprog", True), ("greedy", True)} <= kinds


def released(runner: OffloadRunner) -> tuple[int, int]:
    """(bytes offloaded from storages the executor owns, bytes of those now freed)."""
    total = freed = 0
    for rec in runner.records.values():
        for b in rec.blocks:
            total += b.nbytes
            freed += b.nbytes if b.released and b.storage.nbytes() == 0 else 0
    return total, freed


def checked_step(net: OffloadedChain, x: torch.Tensor,
                 seed: int) -> tuple[torch.Tensor, torch.Tensor, int, int]:
    """``step`` that also returns, between the forward and the backward, the bytes offloaded
    from storages the executor owns and the bytes of those freed (storage resized to 0)."""
    torch.manual_seed(seed)
    x = x.clone().requires_grad_(True)
    y = net(x)
    assert y.grad_fn is not None
    runner = y.grad_fn.step.runner  # the node of B_L holds the step's runner
    assert isinstance(runner, OffloadRunner)
    total, freed = released(runner)
    loss = y.square().mean()
    loss.backward()
    assert not runner.records and not runner.groups  # everything came back and was used
    assert x.grad is not None
    return loss.detach(), x.grad, total, freed


def selected(name: str) -> list[dict[str, Any]]:
    """Every POFO plan (plain a_ℓ and ā_ℓ offloads) and one DYNPROG and GREEDY plan (ā_ℓ):
    the CPU of the test machine is slow."""
    entries = fixtures(name)
    return ([e for e in entries if e["algo"] == "pofo"]
            + [next(e for e in entries if e["algo"] == a) for a in ("dynprog", "greedy")])


@pytest.mark.parametrize("name", sorted(MODELS))
def test_offload_transparency(name: str) -> None:
    """Loss, input gradient, weight gradients and buffers equal the plain model's, and the
    offloaded storages are freed during the step.

    After the forward phase the storages of the offloaded activations hold 0 bytes: every
    tensor sharing them (the runner's a_ℓ, the next forward's detached input, autograd's
    saved tensors) lost its memory; the backward brings them back."""
    model, x = MODELS[name]()
    model.train()
    ref = copy.deepcopy(model)  # the plain model's two steps, once for every plan
    want = [step(ref, x, seed) for seed in (1, 2)]
    for e in selected(name):
        p = plan_of(e)
        what = f"{e['algo']} at {e['budget_bytes']} B"
        net_model = copy.deepcopy(model)
        net = p.wrap(net_model)
        assert isinstance(planned(net).executor(x), OffloadedChain)  # type: ignore[union-attr]
        for seed, (want_loss, want_dx) in zip((1, 2), want, strict=True):
            got_loss, got_dx, total, freed = checked_step(net, x, seed)
            torch.testing.assert_close(got_loss, want_loss, rtol=1e-6, atol=1e-7)
            torch.testing.assert_close(got_dx, want_dx, rtol=1e-5, atol=1e-6)
            # Only a view shared with a later stage's output stays (resnet's Flatten, 128 B).
            assert total > 0 and freed >= total - 128, (what, total, freed)
        for (n, pr), pn in zip(ref.named_parameters(), net_model.parameters(), strict=True):
            assert pn.grad is not None, f"{what}: no gradient for {n}"
            torch.testing.assert_close(pn.grad, pr.grad, rtol=1e-5, atol=1e-6,
                                       msg=lambda m, n=n, w=what: f"{w}: {n}: {m}")
        for (n, br), bn in zip(ref.named_buffers(), net_model.buffers(), strict=True):
            torch.testing.assert_close(bn, br, rtol=1e-6, atol=1e-7,
                                       msg=lambda m, n=n, w=what: f"{w}: buffer {n}: {m}")


def forward_only(net: OffloadedChain, x: torch.Tensor) -> tuple[torch.Tensor, OffloadRunner]:
    y = net(x.clone().requires_grad_(True))
    assert y.grad_fn is not None
    runner = y.grad_fn.step.runner  # the node of B_L holds the step's runner
    assert isinstance(runner, OffloadRunner)
    return y, runner


def test_plain_offload_frees_shared_storage() -> None:
    """An offloaded a_ℓ read by a recorded F_all ℓ+1 (which saved it, and whose detached
    input aliases it) is freed all the same: the storage is resized, not dereferenced."""
    seen = 0
    for name in sorted(MODELS):
        model, x = MODELS[name]()
        for e in fixtures(name):
            p = plan_of(e)
            cases = [t["tensor"] for t in e["plan"]["offload"]["transfers"]
                     if t["dir"] == "offload" and t["tensor"][1:].isdigit()
                     and 0 < int(t["tensor"][1:]) < p.num_stages
                     and p.sequence[t["after"] + 1].kind == "F_all"]
            if not cases:
                continue
            net = OffloadedChain(flatten_stages(copy.deepcopy(model)), p)
            y, runner = forward_only(net, x)
            for c in cases:
                k = int(c[1:])
                x_next, _ = runner.saved[k + 1]
                a = runner.acts[k].untyped_storage()
                assert a.nbytes() == 0 and x_next.untyped_storage().nbytes() == 0, (name, c)
                assert x_next.untyped_storage().data_ptr() == a.data_ptr()
                seen += 1
            y.square().mean().backward()
    assert seen > 0  # POFO plans at small budgets do this (e.g. vgg: F_ck 6, F_all 7)


def test_abar_moves_saved_tensors() -> None:
    """Offloading ā_ℓ of a Transformer layer moves its internal activations (autograd's
    saved tensors), not its parameters nor its input."""
    model, x = MODELS["transformer"]()
    p = find("transformer", "greedy")
    net = OffloadedChain(flatten_stages(model), p)
    y, runner = forward_only(net, x)
    group = runner.groups[2]  # the first encoder layer
    params = {q.untyped_storage().data_ptr() for q in model.parameters()}
    moved = [h for h in group.holders if h.block is not None]
    kept = [h for h in group.holders if h.block is None]
    assert len(moved) > 5 and all(h.tensor.untyped_storage().nbytes() == 0 for h in moved)
    assert all(h.tensor.untyped_storage().data_ptr() not in params for h in moved)
    assert any(h.tensor.untyped_storage().data_ptr() in params for h in kept)
    y.square().mean().backward()


def test_no_transfers_is_rotor() -> None:
    """A plan whose offload section has no transfers runs exactly as the rotor executor."""
    model, x = MODELS["vgg"]()
    chain = synthetic_chain(flatten_stages(model), x)
    lo = _bind.min_budget({"chain": chain}, {"algo": "rotor", "slots": 500})
    doc = json.loads(plan_chain(chain, {"algo": "rotor", "budget_bytes": lo}))
    rotor = Plan.from_json(json.dumps(doc))
    doc["offload"] = {"bandwidth_bytes_per_s": 1e9, "memory_model": "integral",
                      "sync_at_loss": True, "offloaded_bytes": 0, "transfers": []}
    offl = Plan.from_json(json.dumps(doc))
    a_model, b_model = copy.deepcopy(model), copy.deepcopy(model)
    a, b = wrap(rotor, a_model), offl.wrap(b_model)
    runs_a, runs_b = planned(a), planned(b)
    assert runs_a is not None and runs_b is not None
    assert type(runs_a.executor(x)) is CheckpointedChain
    assert type(runs_b.executor(x)) is OffloadedChain
    for seed in (1, 2):
        la, dxa = step(a, x, seed)
        lb, dxb = step(b, x, seed)
        assert torch.equal(la, lb) and torch.equal(dxa, dxb)
    for pa, pb in zip(a_model.parameters(), b_model.parameters(), strict=True):
        assert pa.grad is not None and pb.grad is not None and torch.equal(pa.grad, pb.grad)
    for ba, bb in zip(a_model.buffers(), b_model.buffers(), strict=True):
        assert torch.equal(ba, bb)


def test_issue_points() -> None:
    """The link plan acts where the planner's positions say: offloads right after their
    anchor, prefetches at the op running at their planned start (never after their anchor,
    after the loss in a synchronized plan), in link order, each waited for before its
    anchor."""
    for name in sorted(MODELS):
        for e in fixtures(name):
            p = plan_of(e)
            cut = [i for i, op in enumerate(p.sequence) if op.stage == p.num_stages + 1][0]
            timing = e["plan"]["offload"]["timing"]
            positions = e["plan"]["offload"]["positions"]
            off = p.offload
            assert off is not None
            lp = LinkPlan(p)
            pos = {t.index: q for q, ts in lp.issue_at.items() for t in ts}
            assert pos == {j: q["issue_after"] + 1 for j, q in enumerate(positions)}
            order = [pos[t.index] for t in lp.transfers]
            assert order == sorted(order)
            for t in lp.transfers:
                if t.dir == "offload":
                    assert pos[t.index] >= t.anchor + 1
                    assert t in lp.release_at[positions[t.index]["release_after"] + 1]
                    continue
                assert t in lp.wait_at[max(t.anchor, cut + 2)]
                assert pos[t.index] <= max(t.anchor, cut + 2)
                if off.sync_at_loss:  # OR.3: prefetches after the loss
                    assert pos[t.index] >= cut + 2
                start = timing["transfer_start"][t.index]
                k = max(i for i, c in enumerate(timing["compute_start"]) if c <= start + 1e-9)
                assert pos[t.index] >= min(k, t.anchor)


def _set(j: int, **kw: Any) -> Callable[[dict[str, Any]], None]:
    return lambda off: off["transfers"][j].update(kw)


def _position(j: int, **kw: Any) -> Callable[[dict[str, Any]], None]:
    return lambda off: off["positions"][j].update(kw)


# (what, mutation of the offload section, message, refused when the document is read rather
# than when the executor is built). Whether the transfers fit the sequence (a tensor
# offloaded while stored, prefetched before it is read, link order) and the positions are
# those they give is the Go simulator's check (planner/offload: TestSimulateInvalid,
# TestPositionsRefused, TestCheckPositions), which every plan of the planner passed.
MALFORMED: list[tuple[str, Callable[[dict[str, Any]], None], str, bool]] = [
    ("no list", lambda off: off.update(transfers={}), "offload.transfers: want a list", True),
    ("dir", _set(1, dir="sideways"), "offload.transfers[1].dir: unknown value 'sideways'", True),
    ("name", _set(2, tensor="b2"), "offload.transfers[2].tensor: 'b2'", True),
    ("stage", _set(2, tensor="abar99"),
     "offload.transfers[2].tensor: 'abar99': the chain has 16 stages", True),
    ("anchor key", lambda off: off["transfers"][1].update(before=3),
     "offload.transfers[1]: offload abar1: needs an integer 'after'", True),
    ("anchor range", _set(1, after=99), "offload.transfers[1].after: 99 out of range -1..33",
     True),
    ("timing", lambda off: off["timing"]["transfer_start"].pop(), "offload.timing: ", True),
    ("positions count", lambda off: off["positions"].pop(),
     "offload.positions: 9 entries for 10 transfers", True),
    ("position kind", _position(1, wait_before=3),
     "offload.positions[1]: offload abar1: needs an integer 'release_after' (and no "
     "'wait_before')", True),
    ("position order", _position(6, issue_after=19),
     "offload.positions[6].issue_after: 19, before the previous transfer's 20", True),
    ("release range", _position(1, release_after=40),
     "offload.positions[1].release_after: 40 with issue_after 0", True),
    ("wait range", _position(9, wait_before=5), "offload.positions[9].wait_before: 5, want 33..33",
     True),
    ("no positions", lambda off: off.pop("positions"),
     "offload.positions: missing (want where the executor issues", False),
]


@pytest.mark.parametrize("what,mutate,message,on_read", MALFORMED,
                         ids=[m[0] for m in MALFORMED])
def test_malformed(what: str, mutate: Callable[[dict[str, Any]], None], message: str,
                   on_read: bool) -> None:
    model, _ = MODELS["vgg"]()
    e = next(e for e in fixtures("vgg") if e["algo"] == "greedy")
    doc = copy.deepcopy(e["plan"])
    assert [t["tensor"] for t in doc["offload"]["transfers"]][:5] == \
        ["a0", "abar1", "abar2", "abar3", "abar4"]
    assert len(doc["offload"]["transfers"]) == 10 and doc["offload"]["transfers"][9] == \
        {"dir": "prefetch", "tensor": "a0", "bytes": doc["offload"]["transfers"][0]["bytes"],
         "before": 33}
    mutate(doc["offload"])
    with pytest.raises(ScheduleError) as err:
        p = Plan.from_json(json.dumps(doc))
        assert not on_read, "read without error"
        p.wrap(model)
    assert message in str(err.value), str(err.value)
