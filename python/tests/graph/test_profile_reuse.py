"""A stored profile is reused only for the same question: one made without the stages'
operation-level options is not silently returned to a call that asks for them (the
``rotor-ops`` planner would find none), nor the other way round."""

from __future__ import annotations

from pathlib import Path

import chainplan
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
