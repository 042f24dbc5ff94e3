"""A plan run on an input shape other than its profile's warns once (issue 9: a plan made
at batch 4 ran at batch 32 without a word, 12.1 MiB planned and 140.1 MiB measured)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan.shapecheck import ShapeWarning
from chainplan.tradeoff import chain_json
from tests.models import MODELS


def test_wrapped_plan_warns_once_per_new_shape() -> None:
    model, x = MODELS["resnet"]()
    prof = chainplan.profile(model, x, repeats=1, warmup=0, progress=False)
    net = chainplan.plan(prof, budget="min").wrap(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net(x).sum().backward()  # the profiled shape: silent
    big = x.repeat(2, 1, 1, 1)
    with pytest.warns(ShapeWarning, match=r"input shape \[4, 3, 12, 12\].*\[8, 3, 12, 12\]"):
        net(big).sum().backward()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net(big).sum().backward()  # once per shape, not at every step


def test_plan_from_chain_file_does_not_warn(tmp_path: Path) -> None:
    """A chain file carries no input shape: nothing to compare with."""

    model = nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))
    prof = chainplan.profile(model, torch.randn(3, 4), repeats=1, warmup=0, progress=False)
    assert prof.run_id is not None
    chain = tmp_path / "chain.json"
    chain.write_text(chain_json(prof.run_id))
    net = chainplan.plan(chain, budget="min").wrap(model)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net(torch.randn(5, 4)).sum().backward()
