"""Models of towers joined at the loss for the tests: a CLIP-like dual encoder and a triplet
network, small enough for a few seconds on two CPU cores."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class ResBlock(nn.Module):
    """A residual MLP block: the image tower's stage."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.gelu(self.fc1(x)))


class TextBlock(nn.Module):
    """A transformer encoder layer on token embeddings."""

    def __init__(self, width: int) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(width, 2, 2 * width, dropout=0.0, batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


class Pool(nn.Module):
    """Mean over the tokens, then a projection to the embedding."""

    def __init__(self, width: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x.mean(dim=1))


class DualEncoder(nn.Module):
    """Image and text towers of unequal depth joined in a contrastive loss (CLIP's, with a
    learned temperature): ``forward(images, tokens)`` returns the loss."""

    def __init__(self, width: int = 64, dim: int = 16, vocab: int = 100, image_blocks: int = 6,
                 text_blocks: int = 2) -> None:
        super().__init__()
        self.image = nn.Sequential(nn.Linear(48, width),
                                   *[ResBlock(width) for _ in range(image_blocks)],
                                   nn.Linear(width, dim))
        self.text = nn.Sequential(nn.Embedding(vocab, 32),
                                  *[TextBlock(32) for _ in range(text_blocks)], Pool(32, dim))
        self.log_scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, images: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        a = F.normalize(self.image(images), dim=-1)
        b = F.normalize(self.text(tokens), dim=-1)
        logits = self.log_scale.exp() * a @ b.T
        labels = torch.arange(logits.shape[0], device=logits.device)
        return (F.cross_entropy(logits, labels) + F.cross_entropy(logits.T, labels)) / 2


def dual_batch(n: int = 24) -> tuple[torch.Tensor, torch.Tensor]:
    return torch.randn(n, 48), torch.randint(0, 100, (n, 12))


class Triplet(nn.Module):
    """One tower run on an anchor, a positive and a negative: ``forward`` returns the three
    embeddings (the training script applies the triplet loss)."""

    def __init__(self, width: int = 96, blocks: int = 5) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(32, width), *[ResBlock(width) for _ in range(blocks)],
                                 nn.Linear(width, 8))

    def forward(self, a: torch.Tensor, p: torch.Tensor,
                n: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.net(a), self.net(p), self.net(n)


def triplet_batch(n: int = 32) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return torch.randn(n, 32), torch.randn(n, 32), torch.randn(n, 32)
