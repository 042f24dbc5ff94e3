"""``chainplan.record`` measures what ``chainplan.profile`` measures, from a training loop."""

from __future__ import annotations

import copy
import time
from collections import defaultdict

import pytest
import torch
from torch import nn

import chainplan
from chainplan.errors import ProfileError
from chainplan.profiler.memory import MemoryProbe
from chainplan.schema import ProfileRow
from tests.models import MODELS

STEPS = 8  # one warm-up step, one measured for memory, six timed


def by_stage(rows: tuple[ProfileRow, ...]) -> dict[int, list[ProfileRow]]:
    out: dict[int, list[ProfileRow]] = defaultdict(list)
    for r in rows:
        out[r.stage_index].append(r)
    return out


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss: nn.Module,
          steps: int = STEPS) -> None:
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9, weight_decay=1e-3)
    for _ in range(steps):
        loss(model(x), y).backward()
        opt.step()
        opt.zero_grad()


@pytest.mark.parametrize("name", ["vgg", "resnet", "transformer"])
def test_record_agrees_with_profile(name: str) -> None:
    model, x = MODELS[name]()
    y = torch.randint(0, 10, (x.shape[0],))
    ce = nn.CrossEntropyLoss()
    with chainplan.record(model, loss_fn=ce, spread_warning=None) as rec:
        train(model, x, y, ce)
    prof = chainplan.profile(model, x, loss_fn=ce, target=y, repeats=4, warmup=1,
                             progress=False, spread_warning=None)
    assert rec.profile is not None
    assert rec.profile.stage_names == prof.stage_names
    recorded, profiled = by_stage(rec.profile.rows), by_stage(prof.rows)
    assert recorded.keys() == profiled.keys()
    for k, rows in profiled.items():
        r, p = recorded[k][0], rows[0]
        assert (r.stage_name, r.stage_kind) == (p.stage_name, p.stage_kind)
        # Sizes are exact and the same rule makes the columns: equal bytes.
        assert (r.in_bytes, r.out_bytes, r.saved_bytes, r.param_bytes) == (
            p.in_bytes, p.out_bytes, p.saved_bytes, p.param_bytes), (k, r, p)
        assert r.fwd_tmp_bytes is not None and r.bwd_tmp_bytes is not None
    assert len(recorded[1]) == STEPS - 2  # warm-up and the measured step are not timed
    assert all(r.fwd_time_s > 0 and r.bwd_time_s > 0 for r in rec.profile.rows), "no times"
    # The loss is measured: times and memory.
    loss = recorded[len(rec.stages) + 1][0]
    assert loss.stage_kind == "loss" and loss.fwd_time_s > 0 and loss.bwd_time_s > 0
    assert loss.fwd_tmp_bytes == profiled[len(rec.stages) + 1][0].fwd_tmp_bytes


def chain_time(rows: tuple[ProfileRow, ...]) -> float:
    """The chain's forward and backward time over its fastest repetitions (seconds)."""
    return sum(min(r.fwd_time_s + r.bwd_time_s for r in rs) for rs in by_stage(rows).values())


class _Slow(torch.autograd.Function):
    """Identity whose forward and backward each sleep at least ``seconds``."""

    @staticmethod
    def forward(ctx: object, x: torch.Tensor, seconds: float) -> torch.Tensor:  # type: ignore[override]
        time.sleep(seconds)
        ctx.seconds = seconds  # type: ignore[attr-defined]
        return x.clone()

    @staticmethod
    def backward(ctx: object, grad: torch.Tensor) -> tuple[torch.Tensor, None]:  # type: ignore[override]
        time.sleep(ctx.seconds)  # type: ignore[attr-defined]
        return grad, None


class Sleeper(nn.Module):
    def __init__(self, seconds: float) -> None:
        super().__init__()
        self.seconds = seconds

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _Slow.apply(x, self.seconds)  # type: ignore[no-any-return]


def test_record_times_are_seconds_of_the_stage_that_ran() -> None:
    """Recorded and profiled times are seconds of the stage they name: a stage that sleeps
    20 ms in its forward and in its backward is timed at 20 ms or more by both, and far from
    the 20 s a unit error (milliseconds) would give. Sleeping never takes less than asked,
    so a loaded host can only lengthen the times, never fail the lower bound; the upper one
    leaves 250 times the sleep."""
    seconds = 0.02
    model = nn.Sequential(nn.Linear(8, 8), Sleeper(seconds), nn.Linear(8, 4))
    x, y = torch.randn(4, 8), torch.randint(0, 4, (4,))
    ce = nn.CrossEntropyLoss()
    with chainplan.record(model, loss_fn=ce, ingest=False, spread_warning=None) as rec:
        train(model, x, y, ce, steps=4)
    prof = chainplan.profile(model, x, loss_fn=ce, target=y, repeats=2, warmup=1,
                             ingest=False, progress=False, spread_warning=None)
    assert rec.profile is not None
    for source in (rec.profile, prof):
        sleeper = by_stage(source.rows)[2]
        assert sleeper and sleeper[0].stage_name == source.stage_names[1], source.stage_names
        for r in sleeper:
            assert seconds <= r.fwd_time_s < 250 * seconds, r
            assert seconds <= r.bwd_time_s < 250 * seconds, r


def test_recorded_profile_is_plannable_and_describes_the_run() -> None:
    model, x = MODELS["vgg"]()
    x = torch.cat([x, x])  # batch 8, to tell it from any default
    y = torch.randint(0, 10, (x.shape[0],))
    ce = nn.CrossEntropyLoss()
    ref = copy.deepcopy(model)
    with chainplan.record(model, loss_fn=ce) as rec:
        train(model, x, y, ce)
    assert rec.profile is not None and rec.profile.run_id is not None
    run = chainplan.query(f"SELECT batch_size, input_shape, dtype, has_loss FROM runs "
                          f"WHERE run_id = {rec.profile.run_id}").to_pylist()
    assert run == [{"batch_size": 8, "input_shape": "[8,3,16,16]", "dtype": "float32",
                    "has_loss": 1}]
    plan = chainplan.plan(rec.profile, budget="min")
    assert 0 < plan.peak_bytes <= plan.budget_bytes and plan.input_shape == (8, 3, 16, 16)
    # Recording changed nothing in training: the same weights as an unwatched run.
    train(ref, x, y, ce)
    for a, b in zip(ref.parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(b, a, rtol=0, atol=0)
    # And the plan runs with the plain model's gradients.
    net = plan.wrap(model)
    ce(net(x), y).backward()
    grads = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad()
    ce(model(x), y).backward()
    for g, p in zip(grads, model.parameters(), strict=True):
        torch.testing.assert_close(g, p.grad, rtol=1e-5, atol=1e-6)


class WithUnused(nn.Module):
    """A stage with a parameter its forward never uses: it gets no gradient."""

    def __init__(self) -> None:
        super().__init__()
        self.used = nn.Linear(8, 8)
        self.unused = nn.Parameter(torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.used(x)


def test_measured_step_leaves_gradients_as_training_would() -> None:
    """Weight gradients are allocated before the measured step, as profile() does, and put
    back to None where the step gave none, so that an optimizer skips them as usual."""
    model = nn.Sequential(nn.Linear(8, 8), WithUnused(), nn.ReLU(), nn.Linear(8, 2))
    x = torch.randn(5, 8)
    grads: list[torch.Tensor | None] = []
    with chainplan.record(model, warmup=0, ingest=False, spread_warning=None) as rec:
        for _ in range(3):
            model(x).square().mean().backward()
            grads.append(model[1].unused.grad)
            model.zero_grad()  # set_to_none: every backward allocates the gradients
    assert grads == [None, None, None]
    assert rec.profile is not None
    assert all(r.saved_bytes is not None for r in rec.profile.rows)


def test_loss_function_through_rec_loss_fn() -> None:
    model, x = MODELS["vgg"]()
    y = torch.randint(0, 10, (x.shape[0],))
    with chainplan.record(model, loss_fn=nn.functional.cross_entropy, ingest=False,
                          spread_warning=None) as rec:
        assert rec.loss_fn is not None
        for _ in range(4):
            rec.loss_fn(model(x), y).backward()
    assert rec.profile is not None
    loss = by_stage(rec.profile.rows)[len(rec.stages) + 1]
    assert len(loss) == 2 and loss[0].stage_name == "cross_entropy"
    assert all(r.fwd_time_s > 0 and r.bwd_time_s > 0 for r in loss)
    assert loss[0].fwd_tmp_bytes is not None and loss[0].fwd_tmp_bytes > 0


def test_without_loss_fn_the_loss_is_free() -> None:
    model, x = MODELS["vgg"]()
    with chainplan.record(model, ingest=False, spread_warning=None) as rec:
        for _ in range(3):
            model(x).square().mean().backward()
    assert rec.profile is not None
    (loss,) = by_stage(rec.profile.rows)[len(rec.stages) + 1]
    assert (loss.stage_name, loss.fwd_time_s, loss.bwd_time_s) == ("none", 0.0, 0.0)


def test_only_steps_of_the_measured_shape_are_timed() -> None:
    model, x = MODELS["vgg"]()
    with chainplan.record(model, ingest=False, spread_warning=None) as rec:
        for batch in (4, 4, 2, 4, 2, 4):
            model(x[:batch]).square().mean().backward()
        with torch.no_grad():
            model(x)  # not a training step
        model(x)  # a forward without backward: not a complete step
    assert rec.profile is not None
    first = by_stage(rec.profile.rows)[1]
    assert len(first) == 2 and first[0].in_bytes == x.numel() * 4


def test_too_few_steps() -> None:
    model, x = MODELS["vgg"]()
    with pytest.raises(ProfileError, match=r"saw 2 training step\(s\); it needs 1 warm-up"):
        with chainplan.record(model, ingest=False):
            for _ in range(2):
                model(x).sum().backward()
    # A loss function never called through rec.loss_fn: three steps are tried for memory,
    # then the others run unprobed, and the error says what was missing.
    with pytest.raises(ProfileError, match=r"tried on 3\).*computed by rec.loss_fn"):
        with chainplan.record(model, loss_fn=nn.functional.cross_entropy, ingest=False) as rec:
            for _ in range(6):
                nn.functional.cross_entropy(model(x), torch.zeros(4, dtype=torch.long)).backward()
    assert [s.probed for s in rec.steps] == [False, True, True, True, False, False]
    with pytest.raises(ProfileError, match="warmup"):
        with chainplan.record(model, warmup=-1):
            pass


def test_no_probe_left_open() -> None:
    """Neither a finished recording nor one ended by an error leaves the CPU profiler or a
    saved-tensor hook behind."""
    model, x = MODELS["vgg"]()
    with chainplan.record(model, ingest=False, spread_warning=None):
        for _ in range(3):
            model(x).sum().backward()
    assert not torch.autograd._profiler_enabled()
    with pytest.raises(RuntimeError, match="boom"):
        with chainplan.record(model, ingest=False):
            model(x).sum().backward()
            model(x)  # the measured step's forward, then the script fails mid-step
            raise RuntimeError("boom")
    assert not torch.autograd._profiler_enabled()
    assert torch._C._autograd._top_saved_tensors_default_hooks(False) is None
    with MemoryProbe(device="cpu") as probe:
        torch.empty(1024)
    assert probe.peak_bytes == 4096
