"""The spread of a profile's repeated times, and the warning above a threshold."""

from __future__ import annotations

import random
import time
import warnings

import pytest
import torch
from torch import nn

import chainplan
from chainplan.errors import ChainplanWarning, ProfileError
from chainplan.profiler.spread import stage_spreads, warn_if_spread
from chainplan.schema import ProfileRow


def rows(stage: int, name: str, fwd: list[float], bwd: list[float]) -> list[ProfileRow]:
    return [ProfileRow(stage, name, r, f, b, 0, 0, 0, 0, 0, 0)
            for r, (f, b) in enumerate(zip(fwd, bwd, strict=True))]


def test_stage_spreads_is_range_over_median() -> None:
    spreads = stage_spreads(
        rows(1, "steady", [1.0, 1.0, 1.0], [2.0, 2.0, 2.0])
        + rows(2, "noisy", [1.0, 1.5, 2.0], [4.0, 4.0, 4.2])
        + rows(3, "once", [3.0], [3.0])
        + rows(4, "free", [0.0, 0.0], [0.0, 0.0]))
    assert [s.stage_name for s in spreads] == ["steady", "noisy", "once", "free"]
    steady, noisy, once, free = spreads
    assert (steady.fwd, steady.bwd, steady.spread, steady.median_s) == (0.0, 0.0, 0.0, 3.0)
    assert noisy.fwd == pytest.approx((2.0 - 1.0) / 1.5)
    assert noisy.bwd == pytest.approx(0.2 / 4.0)
    assert noisy.spread == noisy.fwd and noisy.repeats == 3
    assert once.spread == 0.0 and once.repeats == 1  # one repetition has no spread
    assert free.spread == 0.0  # a zero median (no backward) is not a division by zero


def test_warning_names_the_worst_significant_stages() -> None:
    spreads = stage_spreads(
        rows(1, "big", [0.010, 0.010, 0.016], [0.02, 0.02, 0.02])      # 60 % forward
        + rows(2, "bigger", [0.01, 0.01, 0.01], [0.02, 0.02, 0.04])    # 100 % backward
        + rows(3, "calm", [0.01, 0.01, 0.01], [0.02, 0.02, 0.021])     # 5 %
        + rows(4, "tiny", [1e-5, 1e-5, 9e-5], [1e-5, 1e-5, 1e-5])      # 800 %, but 20 µs
        + rows(5, "marginal", [3e-4, 3e-4, 9e-4], [0, 0, 0]))          # 200 %, under 1 %
    with pytest.warns(ChainplanWarning) as caught:
        named = warn_if_spread(spreads, 0.25, what="profile of M")
    assert [s.stage_name for s in named] == ["bigger", "big"]
    (w,) = caught
    msg = str(w.message)
    assert msg.startswith("profile of M: stage times spread more than 25%")
    assert "stage 2 (bigger) 100% (backward), stage 1 (big) 60% (forward)" in msg
    assert "tiny" not in msg and "marginal" not in msg and "calm" not in msg
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert warn_if_spread(spreads, None, what="p") == []  # None never warns
        assert warn_if_spread(spreads, 1.5, what="p") == []   # nothing above 150 %


class Sleepy(nn.Module):
    """A stage whose time varies from call to call, as on a busy host."""

    def __init__(self, low: float, high: float) -> None:
        super().__init__()
        self.low, self.high = low, high
        self.rng = random.Random(0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        time.sleep(self.rng.uniform(self.low, self.high))
        return x * 2


def test_profile_warns_about_a_stage_with_spread_times() -> None:
    model = nn.Sequential(nn.Linear(16, 16), Sleepy(0.002, 0.030), nn.ReLU())
    x = torch.randn(4, 16)
    # (forward) by construction; a busy host can spread the trivial backward more.
    with pytest.warns(ChainplanWarning, match=r"stage 2 \(1:Sleepy\) \d+% \((forward|backward)\)"):
        prof = chainplan.profile(model, x, repeats=5, warmup=1, ingest=False, progress=False)
    sleepy = prof.spread[1]
    assert sleepy.stage_name == "1:Sleepy" and sleepy.repeats == 5
    assert sleepy.fwd > 0.25
    assert prof.max_spread >= sleepy.spread
    assert len(prof.spread) == 4  # three stages and the loss


def test_profile_spread_warning_is_configurable() -> None:
    model = nn.Sequential(nn.Linear(16, 16), Sleepy(0.002, 0.030))
    x = torch.randn(4, 16)
    for threshold in (None, 1e9):
        with warnings.catch_warnings():
            warnings.simplefilter("error", ChainplanWarning)
            chainplan.profile(model, x, repeats=4, warmup=0, ingest=False, progress=False,
                              spread_warning=threshold)
    for bad in (-0.1, "high", float("nan")):
        with pytest.raises(ProfileError, match="spread_warning"):
            chainplan.profile(model, x, ingest=False, spread_warning=bad)  # type: ignore[arg-type]


def test_record_warns_about_spread_steps() -> None:
    model = nn.Sequential(nn.Linear(16, 16), Sleepy(0.002, 0.030), nn.Linear(16, 4))
    x = torch.randn(4, 16)
    with pytest.warns(ChainplanWarning, match=r"recorded profile of Sequential: .*1:Sleepy"):
        with chainplan.record(model) as rec:
            for _ in range(7):
                model(x).square().mean().backward()
    assert rec.profile is not None and rec.profile.spread[1].fwd > 0.25
