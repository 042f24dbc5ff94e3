"""Typed offloading plans: ``Plan.offload`` (chainplan.offloading) read from the planner's
documents, malformed sections refused by field, and the torch-free plan modules."""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.errors import ScheduleError
from chainplan.executors import OffloadedChain, planned, wrap
from chainplan.offloading import Estimate, Offload, Position, Timing, Transfer
from chainplan.schedule import Candidate, Op, Plan
from tests.models import MODELS

# The worked example of pofo spec §5.8, as docs/formats-schedule.md prints it.
EXAMPLE: dict[str, Any] = {
    "algo": "pofo", "feasible": True, "makespan": 20, "peak_bytes": 21, "budget_bytes": 22,
    "slots": 22, "solve_ms": 0.3,
    "sequence": [{"op": k, "stage": s} for k, s in [
        ("F_ck", 1), ("F_all", 2), ("F_all", 3), ("F_all", 4), ("F_all", 5), ("B", 5),
        ("B", 4), ("B", 3), ("B", 2), ("F_all", 1), ("B", 1)]],
    "offload": {
        "bandwidth_bytes_per_s": 1, "memory_model": "fractional", "sync_at_loss": True,
        "offloaded_bytes": 2,
        "transfers": [{"dir": "offload", "tensor": "a0", "bytes": 2, "after": -1},
                      {"dir": "prefetch", "tensor": "a0", "bytes": 2, "before": 9}],
        "timing": {"compute_start": [0, 1, 3, 4, 6, 6.5, 7, 11, 13, 17, 18],
                   "transfer_start": [0, 15]},
        "estimates": [
            {"memory_model": "fractional", "valid": True, "makespan": 20, "peak_bytes": 21},
            {"memory_model": "integral", "valid": True, "makespan": 20, "peak_bytes": 21}],
        "positions": [{"issue_after": -1, "release_after": 0},
                      {"issue_after": 7, "wait_before": 9}]},
    "chosen": "pofo",
    "candidates": [{"algo": "pofo", "feasible": True, "makespan": 20, "peak_bytes": 21,
                    "solve_ms": 0.2},
                   {"algo": "rotor", "feasible": False, "solve_ms": 0.1}]}


def test_example_document() -> None:
    """Every field of the documented example lands in its typed attribute, and writing the
    section back gives the document's own."""
    p = Plan.from_json(json.dumps(EXAMPLE))
    p.validate()
    assert p.sequence[9] == Op("F_all", 1) and p.num_stages == 4
    assert p.offload == Offload(
        bandwidth_bytes_per_s=1.0, memory_model="fractional", sync_at_loss=True,
        offloaded_bytes=2,
        transfers=(Transfer(index=0, dir="offload", stage=0, saved=False, nbytes=2, anchor=-1),
                   Transfer(index=1, dir="prefetch", stage=0, saved=False, nbytes=2, anchor=9)),
        timing=Timing((0, 1, 3, 4, 6, 6.5, 7, 11, 13, 17, 18), (0, 15)),
        estimates=(Estimate("fractional", True, 20.0, 21), Estimate("integral", True, 20.0, 21)),
        positions=(Position(-1, release_after=0), Position(7, wait_before=9)))
    assert p.offload.to_dict() == EXAMPLE["offload"]
    assert [t.label for t in p.offload.transfers] == [
        "transfers[0] (offload a0 after -1)", "transfers[1] (prefetch a0 before 9)"]
    assert p.chosen == "pofo"
    assert p.candidates == (Candidate("pofo", True, 20.0, 21, 0.2),
                            Candidate("rotor", False, 0.0, 0, 0.1))


def test_abar0_is_the_input() -> None:
    """``abar0`` is read as ``a0`` (ā_0 = a_0), as the Go side reads it."""
    doc = copy.deepcopy(EXAMPLE)
    doc["offload"]["transfers"][0]["tensor"] = "abar0"
    p = Plan.from_json(json.dumps(doc))
    assert p.offload is not None and p.offload.transfers[0].tensor == "a0"
    assert not p.offload.transfers[0].saved


def test_checkpointing_plan_has_no_offload() -> None:
    doc = {k: v for k, v in EXAMPLE.items() if k not in ("offload", "chosen", "candidates")}
    p = Plan.from_json(json.dumps(doc))
    assert p.offload is None and p.chosen == "" and p.candidates == ()
    # Go writes a plan's nil transfer list as null: an offload section without transfers.
    doc["offload"] = dict(EXAMPLE["offload"], transfers=None, timing=None, positions=None)
    p = Plan.from_json(json.dumps(doc))
    assert p.offload is not None and p.offload.transfers == () and p.offload.timing is None
    assert p.offload.positions is None


def _put(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """Set (or, with ``...``, delete) the field at a dotted path such as ``offload.a.0.b``."""
    def put(doc: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        k: Any = int(last) if isinstance(node, list) else last
        if value is ...:
            del node[k]
        else:
            node[k] = value
    return put


MALFORMED: list[tuple[str, Any, str]] = [
    ("offload", [], "offload: want an object (got list)"),
    ("offload.bandwidth_bytes_per_s", ..., "offload.bandwidth_bytes_per_s: missing"),
    ("offload.bandwidth_bytes_per_s", -1, "offload.bandwidth_bytes_per_s: want a positive"),
    ("offload.bandwidth_bytes_per_s", float("nan"), "bandwidth_bytes_per_s: want a finite"),
    ("offload.bandwidth_bytes_per_s", "fast", "bandwidth_bytes_per_s: want a finite number"),
    ("offload.memory_model", "solid", "offload.memory_model: unknown value 'solid' "
                                      "(want fractional or integral)"),
    ("offload.sync_at_loss", "yes", "offload.sync_at_loss: want true or false (got 'yes')"),
    ("offload.offloaded_bytes", -2, "offload.offloaded_bytes: want an integer ≥ 0"),
    ("offload.transfers", {}, "offload.transfers: want a list (got {})"),
    ("offload.transfers.0", 3, "offload.transfers[0]: want an object (got int)"),
    ("offload.transfers.0.tensor", "a-1", "offload.transfers[0].tensor: 'a-1': want a<stage>"),
    ("offload.transfers.0.tensor", "a9", "offload.transfers[0].tensor: 'a9': the chain has 4"),
    ("offload.transfers.1.dir", "up", "offload.transfers[1].dir: unknown value 'up'"),
    ("offload.transfers.1.bytes", 2.5, "offload.transfers[1].bytes: want an integer (got 2.5)"),
    ("offload.transfers.1.after", 3, "offload.transfers[1]: prefetch a0: needs an integer "
                                     "'before' (and no 'after')"),
    ("offload.transfers.1.before", ..., "offload.transfers[1]: prefetch a0: needs an integer"),
    ("offload.transfers.1.before", 11, "offload.transfers[1].before: 11 out of range 0..10"),
    ("offload.transfers.0.after", -2, "offload.transfers[0].after: -2 out of range -1..10"),
    ("offload.timing.compute_start.3", "x", "offload.timing.compute_start[3]: want a finite"),
    ("offload.timing.transfer_start.1", -1, "offload.timing.transfer_start[1]: a start time "
                                            "must be non-negative"),
    ("offload.timing.compute_start", [0, 1], "offload.timing: 2 compute and 2 transfer starts, "
                                             "want 11 (one per operation)"),
    ("offload.estimates.1.memory_model", ..., "offload.estimates[1].memory_model: missing"),
    ("offload.positions", {}, "offload.positions: want a list (got {})"),
    ("offload.positions.1", ..., "offload.positions: 1 entries for 2 transfers"),
    ("offload.positions.0", 3, "offload.positions[0]: want an object (got int)"),
    ("offload.positions.0.issue_after", ..., "offload.positions[0].issue_after: missing"),
    ("offload.positions.0.issue_after", "x", "offload.positions[0].issue_after: want an integer"),
    ("offload.positions.0.issue_after", 11, "offload.positions[0].issue_after: 11 out of range "
                                            "-1..10"),
    ("offload.positions.0.release_after", ..., "offload.positions[0]: offload a0: needs an "
                                               "integer 'release_after' (and no 'wait_before')"),
    ("offload.positions.1.release_after", 3, "offload.positions[1]: prefetch a0: needs an "
                                             "integer 'wait_before' (and no 'release_after')"),
    ("offload.positions.1.wait_before", 8, "offload.positions[1].wait_before: 8, want 9..10"),
    ("offload.positions.1.issue_after", 9, "offload.positions[1].wait_before: 9, want 10..10"),
    ("offload.estimates.0.valid", 1, "offload.estimates[0].valid: want true or false"),
    ("candidates.1.algo", ..., "candidates[1].algo: missing"),
    ("chosen", 3, "chosen: want a string"),
    ("makespan", "slow", "makespan: want a finite number"),
    ("sequence.2.stage", 0, "sequence[2].stage: want an integer ≥ 1 (got 0)"),
    ("sequence.0.op", "F_x", "sequence[0].op: unknown value 'F_x'"),
]


@pytest.mark.parametrize("path,value,message", MALFORMED,
                         ids=[f"{m[0]}={m[1]!r}" for m in MALFORMED])
def test_malformed_refused_by_field(path: str, value: Any, message: str) -> None:
    doc = copy.deepcopy(EXAMPLE)
    _put(path, value)(doc)
    with pytest.raises(ScheduleError) as err:
        Plan.from_json(json.dumps(doc))
    assert message in str(err.value), str(err.value)


def test_hand_built_plan_checked() -> None:
    """A plan built in Python, not read, gets the same range checks from validate()."""
    p = Plan.from_json(json.dumps(EXAMPLE))
    assert p.offload is not None
    bad = dataclasses.replace(p.offload.transfers[1], anchor=40)
    q = dataclasses.replace(p, offload=dataclasses.replace(p.offload, transfers=(
        p.offload.transfers[0], bad)))
    with pytest.raises(ScheduleError, match=r"offload\.transfers\[1\]\.before: 40 out of range"):
        q.validate()


def test_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A section is range-checked once: by the decoder, not again by Plan.validate (which
    every executor calls); a copy made by dataclasses.replace is checked anew, and a
    document the Go planner returned (trusted) is not range-checked in Python at all."""
    calls: list[int] = []
    real = Offload._check_ranges

    def counting(self: Offload, ops: int, stages: int, where: str) -> None:
        calls.append(ops)
        real(self, ops, stages, where)

    monkeypatch.setattr(Offload, "_check_ranges", counting)
    p = Plan.from_json(json.dumps(EXAMPLE))
    p.validate()
    p.validate()
    assert calls == [11]
    assert p.offload is not None
    dataclasses.replace(p, offload=dataclasses.replace(p.offload)).validate()
    assert calls == [11, 11]

    doc = copy.deepcopy(EXAMPLE["offload"])
    doc["transfers"][1]["before"] = 40  # out of range: only a range check sees it
    with pytest.raises(ScheduleError, match=r"before: 40 out of range"):
        Offload.from_dict(doc, ops=11, stages=4)
    off = Offload.from_dict(doc, ops=11, stages=4, trusted=True)
    off.check(ops=11, stages=4)
    assert off.transfers[1].anchor == 40 and calls == [11, 11, 11]
    with pytest.raises(ScheduleError, match="want an integer"):  # types are still read
        Offload.from_dict(dict(doc, offloaded_bytes="many"), ops=11, stages=4, trusted=True)


def test_plan_modules_without_torch() -> None:
    """chainplan.schedule and chainplan.offloading import and read a pofo plan with torch
    blocked; Plan.wrap imports the executors (and so torch) only when called."""
    code = ("import json, sys; sys.modules['torch'] = None\n"
            "import chainplan.schedule, chainplan.offloading\n"
            "assert not any(m.startswith('chainplan.executors') for m in sys.modules)\n"
            f"p = chainplan.schedule.Plan.from_json({json.dumps(json.dumps(EXAMPLE))})\n"
            "p.validate(); print(p.offload.transfers[1], p.offload.timing.transfer_start)\n"
            "try:\n    p.wrap(None)\nexcept ImportError:\n    print('wrap needs torch')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["prefetch a0 before 9 (0.0, 15.0)", "wrap needs torch"]


def test_pofo_plan_from_the_planner(monkeypatch: pytest.MonkeyPatch) -> None:
    """A pofo plan of the Go planner reads into typed classes that lose nothing, and the
    executor runs it from them alone (an empty ``raw``), with the plain model's gradients,
    without crossing into Go again."""
    model, x = MODELS["vgg"]()
    y = torch.randint(0, 10, (x.shape[0],))
    ce = nn.CrossEntropyLoss()
    prof = chainplan.profile(model, x, loss_fn=ce, target=y, repeats=1, warmup=0,
                             progress=False, spread_warning=None)
    p = chainplan.plan(prof, budget="min", algo="pofo", bandwidth="12GB/s")
    off = p.offload
    assert off is not None and off.bandwidth_bytes_per_s == 12e9
    assert off.memory_model == "fractional" and off.transfers
    assert off.to_dict() == p.raw["offload"]  # nothing dropped, nothing invented
    assert [t.index for t in off.transfers] == list(range(len(off.transfers)))
    dirs = [t.dir for t in off.transfers]
    assert dirs == sorted(dirs) and "prefetch" in dirs  # offloads first, on one link
    offloaded = {t.tensor for t in off.transfers if t.dir == "offload"}
    assert {t.tensor for t in off.transfers if t.dir == "prefetch"} <= offloaded
    assert off.offloaded_bytes == sum(t.nbytes for t in off.transfers if t.dir == "offload")
    assert off.timing is not None and len(off.timing.compute_start) == len(p.sequence)
    assert {e.memory_model for e in off.estimates} == {"fractional", "integral"}
    assert p.chosen in {c.algo for c in p.candidates}
    assert all(isinstance(c, Candidate) and c.solve_ms >= 0 for c in p.candidates)

    rotor = chainplan.plan(prof, budget="min")
    assert rotor.offload is None and rotor.chosen == "" and rotor.candidates == ()

    ref = copy.deepcopy(model)
    ce(ref(x), y).backward()
    crossings: list[object] = []
    monkeypatch.setattr(_bind, "call", lambda fn, *args: crossings.append(fn))
    net = wrap(dataclasses.replace(p, raw={}), model)
    assert isinstance(planned(net).executor(x), OffloadedChain)  # type: ignore[union-attr]
    ce(net(x), y).backward()
    assert crossings == []
    for a, b in zip(ref.parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6)
