"""Chain extraction: the split each model gets, the refusals, and the cut-point algorithm
against brute force."""

from __future__ import annotations

import itertools
import random

import pytest
import torch
from torch import nn

import chainplan
from chainplan import stages
from chainplan.errors import ProfileError
from chainplan.graph.capture import CaptureError
from chainplan.graph.chain import BranchWarning, extract
from chainplan.graph.cuts import cut_points
from tests.graph.models import CASES


@pytest.mark.parametrize("name", sorted(n for n in CASES if n != "unet"))
def test_split(name: str) -> None:
    """Stage count, boundaries (the module paths each stage covers) and side values."""
    case = CASES[name]()
    split = stages(case.model, *case.args, **case.kwargs)
    assert split.names == case.names
    assert [s.name for s in split.side] == case.side
    assert split.source == "graph" and not split.branches


def test_gpt_boundaries() -> None:
    """The GPT is cut between the ModuleList's blocks and inside each block at its residual
    addition (between the attention and the MLP); the mask is read by every attention half
    and by nothing else; the embeddings' position ids stay inside the first stage."""
    case = CASES["gpt"]()
    split = stages(case.model, *case.args, **case.kwargs)
    halves = [m for i in range(4) for m in (
        (f"blocks.{i}.ln1", f"blocks.{i}.attn", f"blocks.{i} (part)"),
        (f"blocks.{i}.ln2", *(f"blocks.{i}.mlp.{j}" for j in range(3)), f"blocks.{i} (part)"))]
    halves[-1] = (*halves[-1][:-1], "ln_f", "blocks.3 (part)")
    assert [s.modules for s in split.stages] == [("wte", "wpe", "drop"), *halves, ("head",)]
    assert [s.reads for s in split.stages] == [(), *[("mask",), ()] * 4, ()]
    assert split.level == 0
    assert split.stages[-1].out_shape == (64, 256)
    text = str(split)
    assert "blocks.0.ln1+blocks.0.attn" in text
    assert "side value mask (argument): bool [16, 16]" in text


def test_block_cut_inside() -> None:
    """A block cut inside: every path of a pre-norm block crosses the residual addition
    ``x + attn(ln1(x))``, which becomes a stage boundary one module level down; without
    the residual rule the blocks stay whole."""
    from chainplan.graph.analysis import analyze
    from chainplan.graph.capture import capture
    from chainplan.graph.choose import choose_boundaries

    case = CASES["gpt"]()
    g = analyze(capture(case.model, case.args, case.kwargs))
    fine, level = choose_boundaries(g)
    whole, whole_level = choose_boundaries(g, residual=False)
    assert level == whole_level == 0
    inner = sorted(set(fine) - set(whole))
    assert len(fine) == len(whole) + 4 and len(inner) == 4  # one cut inside each block
    for i in inner:
        n = g.path[i]
        assert g.level[i] == 1 and "add" in str(n.target)  # the residual addition
        assert "attn" in "".join(str(p) for _, p, _ in g.stacks[n.args[1]])


def test_long_skips_are_merged_and_reported() -> None:
    """A U-Net's encoder-to-decoder skips cannot be cut: what lies between their ends is
    one stage, and the warning names the branches' ends."""
    case = CASES["unet"]()
    with pytest.warns(BranchWarning, match="branches run across it") as record:
        split = stages(case.model, *case.args, **case.kwargs)
    assert split.names == case.names
    message = str(record[0].message)
    assert "stage 2 of 4 (pool+...+up1) holds 18 of the 27 operations of UNet" in message
    assert "from enc1.3 (relu_1) to forward (cat_1)" in message
    assert "from enc2.3 (relu_3) to forward (cat)" in message
    assert split.branches == (message,)


def test_sequential_is_its_declared_stages() -> None:
    model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Sequential(nn.Linear(8, 2)))
    split = stages(model, torch.randn(3, 4))
    assert split.source == "sequential"
    assert split.names == ["0:Linear", "1:ReLU", "2.0:Linear"]
    assert split.stages[-1].out_shape == (3, 2)
    with pytest.raises(ProfileError, match="got keyword 'repeat' .a misspelt option"):
        chainplan.profile(model, torch.randn(3, 4), repeat=3)


def test_stages_share_the_models_tensors() -> None:
    """Stages register the model's own parameters and buffers (no copies); the tied
    embedding is one tensor in the first and the last stage."""
    case = CASES["gpt"]()
    chain = extract(case.model, case.args, case.kwargs)
    own = {id(p) for p in case.model.parameters()}
    assert all(id(p) in own for s in chain.stages for p in s.parameters())
    first, last = chain.stages[0], chain.stages[-1]
    tied = case.model.wte.weight
    assert any(p is tied for p in first.parameters()) and any(p is tied for p in last.parameters())
    resnet = CASES["resnet"]().model
    bufs = {id(b) for b in resnet.buffers()}
    chain = extract(resnet, (torch.randn(2, 3, 16, 16),), {})
    assert all(id(b) in bufs for s in chain.stages for b in s.buffers())


def test_capture_changes_nothing() -> None:
    """Capturing runs on fake tensors: no random numbers drawn, no statistics updated."""
    case = CASES["resnet"]()
    before = {k: v.clone() for k, v in case.model.state_dict().items()}
    rng = torch.get_rng_state()
    extract(case.model, case.args, case.kwargs)
    assert torch.equal(torch.get_rng_state(), rng)
    assert all(torch.equal(before[k], v) for k, v in case.model.state_dict().items())


class Branchy(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.sum() > 0:
            return x * 2
        return x


class UpdatesInput(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        y.add_(1)
        return self.fc(x) + y


class TwoOutputs(nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x, x * 2


class Ignores(nn.Module):
    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return y * 2


def test_refusals_name_the_construct_and_the_fallback() -> None:
    x = torch.randn(2, 3)
    with pytest.raises(CaptureError, match="data-dependent control flow") as err:
        stages(Branchy(), x)
    assert "if x.sum() > 0" in str(err.value) and "nn.Sequential" in str(err.value)
    with pytest.raises(CaptureError, match="updates its input 'y' in place") as err:
        stages(UpdatesInput(), x, torch.randn(2, 3))
    assert "add_" in str(err.value) and "y.add_(1)" in str(err.value)
    with pytest.raises(CaptureError, match="returns 2 values"):
        stages(TwoOutputs(), x)
    with pytest.raises(CaptureError, match="without a tensor argument"):
        stages(TwoOutputs(), [1, 2])
    with pytest.raises(CaptureError, match="returns its input unchanged"):
        stages(nn.Identity(), x)
    with pytest.raises(CaptureError, match="does not depend on its first tensor argument"):
        stages(Ignores(), x, torch.randn(2, 3))


def _brute_force(n: int, edges: list[tuple[int, int]]) -> list[int]:
    """The nodes whose removal disconnects 0 from n - 1."""
    out = []
    for v in range(1, n - 1):
        reach = {0}
        for u, w in sorted(edges):
            if u in reach and w != v:
                reach.add(w)
        if n - 1 not in reach:
            out.append(v)
    return out


def test_cut_points_match_brute_force() -> None:
    rng = random.Random(11)
    for _ in range(300):
        n = rng.randint(2, 12)
        edges = [(i, i + 1) for i in range(n - 1)]  # every node lies on a path
        edges += [(u, w) for u, w in itertools.combinations(range(n), 2) if rng.random() < 0.15]
        assert cut_points(n, edges) == _brute_force(n, edges), (n, edges)
    with pytest.raises(ValueError, match="not a forward edge"):
        cut_points(3, [(2, 1)])


def test_side_values_are_held_once_not_saved_per_stage() -> None:
    """The denoiser's timestep embedding is computed once per step (the prelude), reaches
    every block as the same detached leaf, and no block counts it in what it saves."""
    from chainplan.profiler.saved import SavedTensorProbe

    case = CASES["denoiser"]()
    chain = extract(case.model, case.args, case.kwargs)
    x, side = chain.bind(case.args, case.kwargs)
    (leaf,) = side.leaves
    assert list(side.values) == ["linear_1"] and side.anchor is not None
    with side.scope():
        block = chain.stages[1]
        assert any(b is leaf for b in block.buffers())
        with SavedTensorProbe(module=block) as probe:
            block(chain.stages[0](x))
    assert probe.is_packed(leaf) and not probe.is_saved(leaf)
    assert not any(b is leaf for b in block.buffers())  # outside the step
