"""Small real models used across the tests: chains the executors must run transparently."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["vgg_like", "resnet_like", "transformer_like", "MODELS"]


def vgg_like() -> tuple[nn.Sequential, torch.Tensor]:
    """A VGG-style CNN with BatchNorm: conv-bn-relu blocks, pooling, a classifier."""

    def block(cin: int, cout: int) -> nn.Sequential:
        return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())

    model = nn.Sequential(
        block(3, 8), block(8, 8), nn.MaxPool2d(2),
        block(8, 16), block(16, 16), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(16 * 4 * 4, 10),
    )
    return model, torch.randn(4, 3, 16, 16)


class ResBlock(nn.Module):
    """A basic residual block: one stage of the chain, branching inside."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


def resnet_like() -> tuple[nn.Sequential, torch.Tensor]:
    """A stem, six residual blocks and a head."""
    model = nn.Sequential(
        nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU()),
        *[ResBlock(8) for _ in range(6)],
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, 10),
    )
    return model, torch.randn(4, 3, 12, 12)


def transformer_like() -> tuple[nn.Sequential, torch.Tensor]:
    """Six Transformer encoder layers with dropout (to prove RNG handling) and a head."""
    layers = [nn.TransformerEncoderLayer(32, 4, dim_feedforward=64, dropout=0.2, batch_first=True)
              for _ in range(6)]
    model = nn.Sequential(nn.Linear(16, 32), *layers, nn.Flatten(), nn.Linear(32 * 8, 10))
    return model, torch.randn(4, 8, 16)


MODELS = {"vgg": vgg_like, "resnet": resnet_like, "transformer": transformer_like}
