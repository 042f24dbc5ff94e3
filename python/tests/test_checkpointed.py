"""chainplan.Checkpointed in a plain training loop (issue 9), and the input-shape checks.

Each test names the behaviour it guards; the issue's findings are quoted where a test is
their regression test.
"""

from __future__ import annotations

import copy
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import chainplan
from chainplan.checkpointed import Checkpointed
from chainplan.errors import InfeasibleBudget, PlanError, ProfileError
from chainplan.executors import planned
from chainplan.executors.offload import OffloadedChain
from chainplan.profiler.run import default_profile_dir
from chainplan.profiler.signature import model_signature
from chainplan.shapecheck import ShapeWarning, warn_if_shape_differs
from tests.models import MODELS

FAST: dict[str, Any] = {"repeats": 1, "warmup": 0}  # profiling options: the tests need sizes


def count(table: str) -> int:
    n: int = chainplan.query(f"SELECT count(*) AS n FROM {table}").to_pylist()[0]["n"]
    return n


def batch(b: int, hw: int = 12) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(b, 3, hw, hw), torch.randint(0, 10, (b,))


def assert_same_state(net: nn.Module, ref: nn.Module) -> None:
    """Same gradients and buffers as the plain model (fp32, tight tolerance)."""
    for (name, a), b in zip(ref.named_parameters(), net.parameters(), strict=True):
        assert b.grad is not None, name
        torch.testing.assert_close(b.grad, a.grad, rtol=1e-5, atol=1e-6, msg=name)
    for (name, a), b in zip(ref.named_buffers(), net.buffers(), strict=True):
        torch.testing.assert_close(b, a, msg=name)


def test_training_loop_two_batch_sizes_second_instance_does_not_profile(
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    # Issue 9: "with the first batch's target it crashes at the next batch size" and "every
    # process start profiles again".
    model, _ = MODELS["resnet"]()
    ref = copy.deepcopy(model)
    _, y0 = batch(4)
    net = Checkpointed(model, budget="min", loss_fn=F.cross_entropy, target=y0,
                       name="resnet-loop", **FAST)
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)

    def step(module: nn.Module, b: int) -> None:
        torch.manual_seed(b)
        x, y = batch(b)
        for m, o in ((module, opt), (ref, ref_opt)):
            o.zero_grad()
            F.cross_entropy(m(x), y).backward()
        assert_same_state(model, ref)
        opt.step()
        ref_opt.step()

    with pytest.warns(ShapeWarning, match="scaled to batch 8"):
        for b in (4, 8, 4):
            step(net, b)
    assert [p.input_shape for p in planned(net).plans] == [(4, 3, 12, 12), (8, 3, 12, 12)]
    assert count("runs") == 1
    assert chainplan.query("SELECT model_name FROM runs").to_pylist() == [
        {"model_name": "resnet-loop"}]

    # After the first step of a shape, a step costs a lookup: nothing is profiled, looked
    # up or planned again.
    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("Checkpointed planned again inside the loop")

    with monkeypatch.context() as patched:  # undoes these only, not the private database
        for fn in ("profile_model", "stored_runs", "plan_from"):
            patched.setattr(f"chainplan.checkpointedplans.{fn}", boom)
        step(net, 8)
        step(net, 4)

    # A second Checkpointed over the same model (a new process would build one) reuses the
    # stored profile at batch 4 and scales it to batch 8: no new run.
    again = Checkpointed(model, budget="min", loss_fn=F.cross_entropy, target=y0,
                         name="resnet-loop", **FAST)
    with caplog.at_level(logging.INFO, logger="chainplan.checkpointed"):
        step(again, 4)
        with pytest.warns(ShapeWarning, match="scaled"):
            step(again, 8)
    assert count("runs") == 1
    assert "reused the stored profile (run 1)" in caplog.text
    # The reused profile plans the same schedule as the first instance did.
    assert planned(again).plans[0].sequence == planned(net).plans[0].sequence


def test_scaled_profile_matches_a_measured_one() -> None:
    model, _ = MODELS["resnet"]()
    net = Checkpointed(model, budget="min", **FAST)
    x4, _ = batch(4)
    x8, _ = batch(8)
    net(x4).sum().backward()
    with pytest.warns(ShapeWarning, match=r"run 1 \(input shape \[4, 3, 12, 12\]\) scaled"):
        net(x8).sum().backward()
    scaled = json.loads((default_profile_dir() / "scaled" / "run1-batch8.chain.json").read_text())
    measured = json.loads(chainplan.tradeoff.chain_json(
        chainplan.profile(model, x8, progress=False, **FAST).run_id))
    assert scaled["input_bytes"] == measured["input_bytes"]
    for s, m in zip(scaled["stages"], measured["stages"], strict=True):
        assert (s["out_bytes"], s["param_bytes"]) == (m["out_bytes"], m["param_bytes"])
        # What a stage saves besides batch-sized tensors does not scale (BatchNorm's
        # per-channel statistics, 64 B here): an estimate, within 1 %.
        assert s["saved_bytes"] == pytest.approx(m["saved_bytes"], rel=0.01), s["name"]


def test_new_shape_says_whether_scaled_or_profiled() -> None:
    model, _ = MODELS["resnet"]()
    net = Checkpointed(model, budget="min", **FAST)
    net(batch(4)[0]).sum().backward()
    with pytest.warns(ShapeWarning, match="scaled to batch 2"):
        net(batch(2)[0]).sum().backward()
    with pytest.warns(ShapeWarning, match=r"profiled anew \(run 2\)"):
        net(batch(4, hw=16)[0]).sum().backward()  # not a batch change: measured
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a known shape says nothing
        net(batch(2)[0]).sum().backward()
    assert count("runs") == 2
    no_rescale = Checkpointed(model, budget="min", rescale=False, **FAST)
    with pytest.warns(ShapeWarning, match="profiled anew"):
        no_rescale(batch(4)[0]).sum().backward()  # reused: run 1
        no_rescale(batch(6)[0]).sum().backward()
    assert count("runs") == 3


def test_loss_needing_a_target_is_refused_before_profiling(private_db: Path) -> None:
    # Issue 9: "with loss_fn but no target it profiles every stage and then fails with a
    # TypeError from a lambda".
    model, _ = MODELS["resnet"]()
    for loss in (F.cross_entropy, nn.CrossEntropyLoss()):
        with pytest.raises(ProfileError, match="takes a target"):
            Checkpointed(model, budget="min", loss_fn=loss)
    with pytest.raises(ProfileError, match="loss_fn"):
        Checkpointed(model, budget="min", target=torch.zeros(4))
    assert not private_db.exists()  # nothing was profiled


def test_loss_without_target_and_target_function_are_profiled() -> None:
    model, _ = MODELS["resnet"]()

    def square_mean(out: torch.Tensor) -> torch.Tensor:
        return out.square().mean()

    net = Checkpointed(model, budget="min", loss_fn=square_mean, **FAST)
    x, _ = batch(4)
    square_mean(net(x)).backward()
    seen: list[tuple[int, ...]] = []

    def target(x: torch.Tensor) -> torch.Tensor:
        seen.append(tuple(x.shape))
        return torch.zeros(x.shape[0], dtype=torch.long)

    by_fn = Checkpointed(model, budget="min", loss_fn=F.cross_entropy, target=target,
                         rescale=False, **FAST)
    F.cross_entropy(by_fn(batch(6)[0]), torch.zeros(6, dtype=torch.long)).backward()
    assert seen == [(6, 3, 12, 12)]
    rows = chainplan.query("SELECT run_id, stage_name, fwd_time_s FROM stages "
                           "WHERE stage_kind = 'loss' ORDER BY run_id").to_pylist()
    assert [r["stage_name"] for r in rows] == ["square_mean", "cross_entropy"]
    assert all(r["fwd_time_s"] > 0 for r in rows), rows


@pytest.mark.parametrize(("options", "message"), [
    ({"algo": "magic"}, "unknown algorithm"),
    ({"algo": "pofo"}, "needs a bandwidth"),
    ({"algo": "pofo", "bandwidth": "fast"}, "fast"),
    ({"algo": "pofo", "bandwidth": -1.0}, "positive"),
    ({"bandwidth": "12GB/s"}, "offloading algorithms only"),
    ({"budget": "2 potatoes"}, "potatoes"),
    ({"budget": -5}, "budget"),
    ({"slots": 0}, "slots"),
])
def test_options_checked_at_construction(options: dict[str, Any], message: str,
                                         private_db: Path) -> None:
    # Issue 9: "a budget below the minimum or an unknown algorithm is accepted at
    # construction and fails seconds into the first call".
    model, _ = MODELS["resnet"]()
    kwargs: dict[str, Any] = {"budget": "min", **options}
    with pytest.raises(PlanError, match=message):
        Checkpointed(model, **kwargs)
    assert not private_db.exists()


def test_input_must_be_a_batched_tensor() -> None:
    model, x = MODELS["resnet"]()
    net = Checkpointed(model, budget="min", **FAST)
    with pytest.raises(ProfileError, match="one tensor"):
        net((x,))
    with pytest.raises(ProfileError, match="batched"):
        net(torch.tensor(1.0))


@pytest.mark.parametrize("value", [0, -1, 1.5, True])
def test_profiling_options_checked_at_construction(value: Any) -> None:
    model, _ = MODELS["resnet"]()
    with pytest.raises(ProfileError, match="repeats"):
        Checkpointed(model, budget="min", repeats=value)


def test_budget_below_minimum_names_it() -> None:
    model, x = MODELS["resnet"]()
    net = Checkpointed(model, budget=1000, **FAST)
    with pytest.raises(InfeasibleBudget, match=r"input shape \[4, 3, 12, 12\].*smallest") as e:
        net(x)
    assert e.value.min_budget_bytes > 1000
    assert str(e.value.min_budget_bytes) in str(e.value)
    # The profile is kept: a fixed budget plans from it, and a second too-small one fails
    # without profiling again.
    ok = Checkpointed(model, budget=e.value.min_budget_bytes, **FAST)
    ok(x).sum().backward()
    with pytest.raises(InfeasibleBudget):
        Checkpointed(model, budget=1000, **FAST)(x)
    assert count("runs") == 1


def test_pofo_with_a_bandwidth_trains() -> None:
    # Issue 9: "algo='pofo' needs a bandwidth it cannot be given".
    model, x = MODELS["vgg"]()
    ref = copy.deepcopy(model)
    y = torch.randint(0, 10, (4,))
    net = Checkpointed(model, budget="min", algo="pofo", bandwidth="12GB/s",
                       loss_fn=nn.CrossEntropyLoss(), target=y, **FAST)
    for m in (net, ref):
        F.cross_entropy(m(x), y).backward()
    assert_same_state(model, ref)
    assert isinstance(planned(net).executor(x), OffloadedChain)
    assert planned(net).plans[0].algo == "pofo"
    assert planned(net).bandwidth == 12e9  # type: ignore[union-attr]


def test_state_dict_is_the_plain_models() -> None:
    # Issue 9: "state-dict keys gain a stages./model. prefix so load_state_dict between the
    # plain and the wrapped model fails".
    model, x = MODELS["resnet"]()
    net = Checkpointed(model, budget="min", **FAST)
    net(x).sum().backward()  # an executor is cached: it adds no keys
    assert list(net.state_dict()) == list(model.state_dict())
    assert [id(p) for p in net.parameters()] == [id(p) for p in model.parameters()]
    assert list(nn.Sequential(net).state_dict()) == list(nn.Sequential(model).state_dict())

    other, _ = MODELS["resnet"]()  # other weights
    net.load_state_dict(other.state_dict())  # plain → wrapped
    for a, b in zip(model.state_dict().values(), other.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    fresh, _ = MODELS["resnet"]()
    fresh.load_state_dict(net.state_dict())  # wrapped → plain
    for a, b in zip(fresh.state_dict().values(), other.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    net.eval()
    assert not model.training and not any(m.training for m in model.modules())
    with torch.no_grad():
        torch.testing.assert_close(net(x), fresh.eval()(x))


def test_model_signature() -> None:
    model, x = MODELS["resnet"]()
    sig = model_signature(model, "cpu")
    same, _ = MODELS["resnet"]()  # other weights, same structure
    assert model_signature(same, "cpu") == sig
    assert model_signature(model, "cuda:0") != sig
    assert model_signature(copy.deepcopy(model).double(), "cpu") != sig
    grown = nn.Sequential(*model, nn.Linear(10, 10))
    assert model_signature(grown, "cpu") != sig
    gelu = copy.deepcopy(model)
    gelu[0][2] = nn.GELU()  # no parameter changes, the module tree does
    assert model_signature(gelu, "cpu") != sig
    prof = chainplan.profile(model, x, progress=False, **FAST)
    stored = chainplan.query(f"SELECT model_signature FROM runs WHERE run_id = {prof.run_id}")
    assert stored.to_pylist() == [{"model_signature": sig}]


def test_model_signature_reads_module_settings() -> None:
    """Settings that change what a step holds without changing a parameter: a dropout's
    probability (at 0 it saves no noise tensor), a convolution's stride, an in-place
    activation. A stored profile of one must not stand in for the other: a GPT-2 without
    dropout was planned from the profile of the same GPT-2 with it, and the reverse
    under-counts every dropout's noise tensor."""
    def mlp(p: float, inplace: bool = False) -> nn.Sequential:
        return nn.Sequential(nn.Linear(8, 8), nn.ReLU(inplace=inplace), nn.Dropout(p),
                             nn.Linear(8, 2))

    sig = model_signature(mlp(0.1), "cpu")
    assert model_signature(mlp(0.1), "cpu") == sig
    assert model_signature(mlp(0.0), "cpu") != sig
    assert model_signature(mlp(0.1, inplace=True), "cpu") != sig
    assert (model_signature(nn.Conv2d(3, 4, 3, stride=2), "cpu")
            != model_signature(nn.Conv2d(3, 4, 3), "cpu"))
    x = torch.randn(4, 8)
    chainplan.profile(mlp(0.1), x, progress=False, **FAST)
    assert chainplan.find_profile(mlp(0.1), x) is not None
    assert chainplan.find_profile(mlp(0.0), x) is None


def test_signature_follows_torch_version(monkeypatch: pytest.MonkeyPatch) -> None:
    model, x = MODELS["resnet"]()
    Checkpointed(model, budget="min", **FAST)(x).sum().backward()
    sig = model_signature(model, "cpu")
    monkeypatch.setattr(torch, "__version__", "0.0.0-other")
    assert model_signature(model, "cpu") != sig
    Checkpointed(model, budget="min", **FAST)(x).sum().backward()  # another torch: measured
    assert count("runs") == 2


def test_profile_without_the_loss_is_not_reused() -> None:
    model, x = MODELS["resnet"]()
    y = torch.randint(0, 10, (4,))
    chainplan.profile(model, x, progress=False, **FAST)  # no loss: the loss costs nothing
    net = Checkpointed(model, budget="min", loss_fn=F.cross_entropy, target=y, **FAST)
    F.cross_entropy(net(x), y).backward()
    assert count("runs") == 2
    with (torch.autocast("cpu", dtype=torch.bfloat16),  # another compute dtype: measured
          pytest.warns(ShapeWarning, match=r"under autocast bfloat16: profiled anew \(run 3\)")):
        F.cross_entropy(net(x), y).backward()
    assert chainplan.query("SELECT dtype FROM runs ORDER BY run_id").to_pylist()[-1] == {
        "dtype": "autocast:bfloat16"}


def test_plan_knows_its_input_shape() -> None:
    model, x = MODELS["resnet"]()
    prof = chainplan.profile(model, x, progress=False, **FAST)
    assert chainplan.plan(prof, budget="min").input_shape == (4, 3, 12, 12)
    assert prof.run_id is not None
    assert chainplan.plan(prof.run_id, budget="min").input_shape == (4, 3, 12, 12)
    loose = chainplan.profile(model, x[:2], ingest=False, progress=False, **FAST)
    assert chainplan.plan(loose, budget="min").input_shape == (2, 3, 12, 12)
    assert chainplan.plan(_chain_file(prof.run_id), budget="min").input_shape is None


def test_warn_if_shape_differs_once_per_plan_and_shape() -> None:
    # Issue 9: "a plan made at batch 4 runs at batch 32 without a word (12.1 MiB planned,
    # 140.1 MiB measured)".
    model, x = MODELS["resnet"]()
    plan = chainplan.plan(chainplan.profile(model, x, progress=False, **FAST), budget="min")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_if_shape_differs(plan, x) is False
    x32 = torch.randn(32, 3, 12, 12)
    with pytest.warns(ShapeWarning, match=r"\[4, 3, 12, 12\].*runs on input shape \[32"):
        assert warn_if_shape_differs(plan, x32) is True
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the same plan and shape again: silent
        assert warn_if_shape_differs(plan, x32) is True
    with pytest.warns(ShapeWarning, match=r"\[8, 3, 12, 12\]"):
        warn_if_shape_differs(plan, x[:1].expand(8, -1, -1, -1))
    unknown = chainplan.plan(_chain_file(plan.run_id), budget="min")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no known shape: nothing to compare with
        assert warn_if_shape_differs(unknown, x32) is False


def _chain_file(run_id: int | None) -> Path:
    """The run's chain as a chain file: a plan made from it knows no input shape."""
    assert run_id is not None
    path = Path(chainplan._bind.data_dir()) / f"run{run_id}.chain.json"
    path.write_text(chainplan.tradeoff.chain_json(run_id))
    return path
