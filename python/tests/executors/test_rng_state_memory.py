"""The memory promise on a plan that recomputes stages drawing random numbers (dropout).

Known (2026-12-07), not fixed: to replay a stage's dropout masks, the executor keeps the
CPU generator state its first forward started with (``torch.get_rng_state()``, 5056 bytes,
a tensor of the CPU allocator) for every stage it recomputes and that draws random numbers,
from that forward to the end of the step (``executors/checkpointstep.py``,
``executors/runner.py``). The profile counts those states only in the overheads of the
random stages' recomputations and options (``profiler/stagerows.py``, ``held_during``):
the chain has no place for bytes held from one operation to a later one, and counting them
in every overhead over-predicted store-all, which takes no state (commit 989d924). A plan
whose peak is an operation of another stage therefore measures up to those states over
its prediction: on the GPT-2 below (HuggingFace, 4 layers, width 64, default dropout), the
smallest plan recomputes stages 2-10, all random, and peaks in the head's forward (stage
11, F_all, not random) with their 9 states held: 9 x 5056 = 45 504 bytes, exactly the
measured excess (848 484 against the 802 980 the same plan measures with the states kept
outside the allocator; its budget 808 500). The hand-written chain below has the same
pattern: 146 952 bytes against a predicted 106 500, 8 states (40 448 bytes) and 4 bytes
over. Strict: the tests say when it is fixed.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest
import torch
from torch import nn

import chainplan
from chainplan.schema import read_rows, write_profile
from tests.executors.test_input_release import _fixed_times
from tests.executors.test_memory_promise import measured

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")

# The tolerance of the promise in tests: the measured peak within the predicted one + 2 %.
TOLERANCE = 1.02
REASON = ("known (2026-12-07): the executor keeps the 5056-byte CPU generator state of every "
          "recomputed random stage from its first forward to the end of the step, and the "
          "profile counts the states only in random stages' recomputation overheads; a plan "
          "peaking in another operation (here the head's forward) measures them over its "
          "prediction (GPT-2: 9 states, 45 504 bytes, 5.6 % over)")


def _fixed_profile_times(prof: chainplan.Profile, path: Path) -> Path:
    """The profile with every time set by the stage's index alone (as ``_fixed_times``,
    for a model the plan wraps through its captured graph, which needs a profile)."""
    rows, meta = read_rows(prof.path)
    fixed = [dataclasses.replace(r, fwd_time_s=1e-3 * r.stage_index,
                                 bwd_time_s=2e-3 * r.stage_index,
                                 recompute_time_s=None if r.recompute_time_s is None
                                 else 1e-3 * r.stage_index) for r in rows]
    return write_profile(path, fixed, meta)


@pytest.mark.xfail(strict=True, reason=REASON)
def test_smallest_plan_holds_its_prediction_on_gpt2_with_dropout(tmp_path: Path) -> None:
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(n_layer=4, n_embd=64, n_head=4, vocab_size=1000,
                                       n_positions=64, bos_token_id=0,
                                       eos_token_id=0)).train()
    ids = torch.randint(0, 1000, (2, 32))
    prof = chainplan.profile(model, input_ids=ids, labels=ids, repeats=1, warmup=0,
                             progress=False, spread_warning=None, ingest=False)
    smallest = chainplan.plan(_fixed_profile_times(prof, tmp_path / "p.arrow"), budget="min")
    got = chainplan.measure(smallest.wrap(model), input_ids=ids, labels=ids, steps=1,
                            store=False).peak_bytes
    assert got <= TOLERANCE * smallest.peak_bytes, (got, smallest.peak_bytes)


def dropout_chain(blocks: int = 8, width: int = 32, vocab: int = 512) -> nn.Sequential:
    """Blocks that draw random numbers, then a head that draws none and peaks above them
    (its logits and their gradient): the smallest plan recomputes the blocks and peaks in
    the head, with the blocks' generator states held."""
    layers: list[nn.Module] = []
    for _ in range(blocks):
        layers += [nn.Linear(width, width), nn.Dropout(0.1)]
    return nn.Sequential(*layers, nn.Linear(width, vocab))


@pytest.mark.xfail(strict=True, reason=REASON)
def test_smallest_plan_holds_its_prediction_on_a_dropout_chain(tmp_path: Path) -> None:
    torch.manual_seed(0)
    model = dropout_chain()
    x, y, loss_fn = torch.randn(16, 32), torch.randint(0, 512, (16,)), nn.CrossEntropyLoss()
    prof = chainplan.profile(model, x, loss_fn=loss_fn, target=y, repeats=1, warmup=0,
                             progress=False, spread_warning=None, ingest=False)
    smallest = chainplan.plan(_fixed_times(prof, tmp_path), budget="min")
    got = measured(smallest.wrap(model), x, loss_fn, y)
    assert got <= TOLERANCE * smallest.peak_bytes, (got, smallest.peak_bytes)
