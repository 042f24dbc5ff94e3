"""A stored profile is reused only for the same question: one made without the stages'
operation-level options is not silently returned to a call that asks for them (the
``rotor-ops`` planner would find none), nor the other way round."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn
from torch.nn import functional as F

import chainplan
from chainplan.profilerow import MEASUREMENT_REVISION
from chainplan.schema import read_rows, write_profile
from tests.graph.models import CASES

FAST = {"repeats": 1, "warmup": 0, "progress": False, "spread_warning": None}


def _profile(stage_options: bool) -> chainplan.Profile:
    case = CASES["mlp"]()
    return chainplan.profile(case.model, *case.args, loss_fn=case.loss_fn, target=case.target,
                             stage_options=stage_options, **FAST, **case.kwargs)


def _has_options(prof: chainplan.Profile) -> bool:
    return any(r.options_json for r in prof.rows)


def test_reuse_matches_on_stage_options(private_db: Path) -> None:
    bare = _profile(False)
    assert not bare.reused and not _has_options(bare)
    with_options = _profile(True)  # asks for options: the bare profile is not reused
    assert not with_options.reused and with_options.run_id != bare.run_id
    assert _has_options(with_options)
    assert _profile(True).reused and _profile(True).run_id == with_options.run_id
    again = _profile(False)
    assert again.reused and again.run_id == bare.run_id


class _LossAndLogits(nn.Module):
    """Returns its loss next to its logits (a ``*ForCausalLM`` given ``labels=``)."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head = nn.Linear(8, 8), nn.Linear(8, 64)

    def forward(self, x: torch.Tensor, labels: torch.Tensor) -> dict[str, torch.Tensor]:
        logits = self.head(torch.tanh(self.body(x)))
        return {"loss": F.cross_entropy(logits, labels), "logits": logits}


def test_a_profile_older_than_the_held_end_is_not_reused(private_db: Path) -> None:
    """Issue 19: profiles of a model returning its loss next to its logits missed one a_L in
    the loss backward's overhead; a stored one from before the fix (a file without the
    holds_end key) must be measured again, not returned with the old rows."""
    model, x, y = _LossAndLogits(), torch.randn(16, 8), torch.randint(0, 64, (16,))
    first = chainplan.profile(model, x, labels=y, **FAST)
    assert read_rows(first.path)[1]["holds_end"] == "true"
    again = chainplan.profile(model, x, labels=y, **FAST)
    assert again.reused and again.run_id == first.run_id
    rows, meta = read_rows(first.path)  # as a file written before the key was
    del meta["holds_end"]
    write_profile(first.path, rows, meta)
    fresh = chainplan.profile(model, x, labels=y, **FAST)
    assert not fresh.reused and fresh.run_id != first.run_id
    # A model whose output is its chain's end alone needs no key to be reused.
    plain = nn.Sequential(nn.Linear(8, 8), nn.Tanh(), nn.Linear(8, 64))
    bare = chainplan.profile(plain, x, loss_fn=F.cross_entropy, target=y, **FAST)
    assert read_rows(bare.path)[1]["holds_end"] == "false"


def test_a_profile_of_an_earlier_measurement_revision_is_not_reused(private_db: Path) -> None:
    """What a profile measures changes with chainplan (the head fused with its loss at
    capture, issue 19): a stored profile from an earlier revision (a file without the
    measurement_revision key, or another value) is measured again by profile(), and
    neither Checkpointed's nor find_profile's stored runs offer it."""
    case = CASES["mlp"]()
    prof = chainplan.profile(case.model, *case.args, loss_fn=case.loss_fn, target=case.target,
                             **FAST, **case.kwargs)
    assert read_rows(prof.path)[1]["measurement_revision"] == MEASUREMENT_REVISION
    sample = case.args[0]
    assert chainplan.reuse.find_profile(case.model, sample, loss_fn=case.loss_fn) == prof.run_id
    rows, meta = read_rows(prof.path)  # as a file an earlier chainplan wrote
    del meta["measurement_revision"]
    write_profile(prof.path, rows, meta)
    assert chainplan.reuse.find_profile(case.model, sample, loss_fn=case.loss_fn) is None
    fresh = chainplan.profile(case.model, *case.args, loss_fn=case.loss_fn,
                              target=case.target, **FAST, **case.kwargs)
    assert not fresh.reused and fresh.run_id != prof.run_id
    assert chainplan.reuse.find_profile(case.model, sample, loss_fn=case.loss_fn) == fresh.run_id
