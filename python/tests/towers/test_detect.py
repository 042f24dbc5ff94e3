"""Recognizing models of towers joined at the loss, and refusing the others."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from chainplan.towers.detect import TowersError, find_towers
from tests.towers.models import DualEncoder, Triplet, dual_batch, triplet_batch


def test_dual_encoder() -> None:
    model = DualEncoder()
    split = find_towers(model, dual_batch())
    assert split is not None
    assert split.names == ("image", "text")
    assert [b.tower for b in split.branches] == [0, 1]
    assert [b.input for b in split.branches] == [0, 1]


def test_triplet_shares_its_tower() -> None:
    """One tower run on three inputs is profiled once: three branches of tower 0."""
    split = find_towers(Triplet(), triplet_batch())
    assert split is not None
    assert split.names == ("net",)
    assert [(b.tower, b.input) for b in split.branches] == [(0, 0), (0, 1), (0, 2)]
    assert split.calls_of(0) == [0, 1, 2]


class Diffusion(nn.Module):
    """``net(x, t)``: t goes into a time embedding, but what follows is the whole network."""

    def __init__(self) -> None:
        super().__init__()
        self.time = nn.Linear(1, 16)
        self.inp = nn.Linear(16, 16)
        self.body = nn.Sequential(*[nn.Linear(16, 16) for _ in range(4)])

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        return self.body(self.inp(x) + self.time(t))


def test_a_heavy_join_is_one_chain() -> None:
    model, args = Diffusion(), (torch.randn(4, 16), torch.randn(4, 1))
    assert find_towers(model, args) is None
    with pytest.raises(TowersError, match="calls modules with .* parameters .* light loss"):
        find_towers(model, args, required=True)


class MaskedText(nn.Module):
    """A text tower that takes the attention mask, a model input, beside the tokens."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(50, 8)
        self.proj = nn.Linear(8, 4)

    def forward(self, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        h = self.emb(tokens) * mask.unsqueeze(-1)
        return self.proj(h.sum(1))


class Towers(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.image = nn.Linear(6, 4)
        self.text = MaskedText()

    def forward(self, x: torch.Tensor, tokens: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return (self.image(x) * self.text(tokens, mask)).sum()


def test_a_tower_may_take_model_inputs() -> None:
    args = (torch.randn(3, 6), torch.randint(0, 50, (3, 5)), torch.ones(3, 5))
    split = find_towers(Towers(), args)
    assert split is not None
    text = split.branches[1]
    assert (text.tower, text.input, text.args, text.at) == (1, 1, (("input", 1), ("input", 2)), 0)


class Computed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return (self.a(x) * self.b(y, ) + self.a.weight.sum()).sum()


class TupleTower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = nn.LSTM(4, 4, batch_first=True)
        self.other = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out, _ = self.enc(x)
        return (out.sum(1) * self.other(y)).sum()


class Shapes(nn.Module):
    def forward(self, x: torch.Tensor) -> dict[str, int]:
        return {"rows": x.shape[0]}


class NoTensorTower(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc = Shapes()
        self.other = nn.Linear(4, 4)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.other(y).sum() * self.enc(x)["rows"]


def test_rules() -> None:
    assert find_towers(Computed(), (torch.randn(2, 4), torch.randn(2, 4))) is not None
    args = (torch.randn(2, 3, 4), torch.randn(2, 4))
    split = find_towers(TupleTower(), args, required=True)  # found; cut or not when profiled
    assert split is not None and split.structured == (True, False)
    with pytest.raises(TowersError, match="tower enc returns dict with no tensor"):
        find_towers(NoTensorTower(), (torch.randn(2, 4), torch.randn(2, 4)), required=True)
    with pytest.raises(TowersError, match="takes 1 tensor input"):
        find_towers(nn.Linear(2, 2), (torch.randn(1, 2),), required=True)
