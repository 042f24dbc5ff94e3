"""The benchmark's models, each an ``nn.Sequential`` chain with its input, target and loss.

* ``gpt``: a small GPT (token and position embedding, pre-norm causal blocks, a large
  vocabulary head); the head's logits dominate the activation memory;
* ``resnet``: a ResNet-like CNN of basic residual blocks (homogeneous stages);
* ``cnn-head``: a heterogeneous VGG-like CNN, large early activations, cheap late stages and
  a fully connected classifier head.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

import torch
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from tests.models import Block, Embed, Head  # noqa: E402  (the tests' GPT, at a larger size)

__all__ = ["MODELS", "Case"]

Case = tuple[nn.Sequential, torch.Tensor, torch.Tensor, nn.Module]


def gpt(vocab: int = 8192, width: int = 128, blocks: int = 4, seq: int = 64,
        batch: int = 8) -> Case:
    """The issue's GPT: an 8192-word head, width 128, 4 blocks, sequence 64, batch 8."""
    model = nn.Sequential(Embed(vocab, width, seq), *[Block(width, 4) for _ in range(blocks)],
                          Head(width, vocab))
    x = torch.randint(0, vocab, (batch, seq))
    return model, x, torch.randint(0, vocab, (batch * seq,)), nn.CrossEntropyLoss()


class Residual(nn.Module):
    def __init__(self, c: int) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(),
            nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x + self.body(x))


def resnet(batch: int = 16) -> Case:
    """A stem and eight residual blocks at 32 channels, 32×32 images, a linear head."""
    model = nn.Sequential(
        nn.Sequential(nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU()),
        *[Residual(32) for _ in range(8)],
        nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10)))
    return model, torch.randn(batch, 3, 32, 32), torch.randint(0, 10, (batch,)), \
        nn.CrossEntropyLoss()


def conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


def cnn_head(batch: int = 16) -> Case:
    """A heterogeneous chain: wide early convolutions at full resolution, narrower ones
    after each pooling, and a two-layer classifier head."""
    model = nn.Sequential(
        conv(3, 32), conv(32, 32), nn.MaxPool2d(2),
        conv(32, 64), conv(64, 64), nn.MaxPool2d(2),
        conv(64, 128), conv(128, 128), nn.MaxPool2d(2),
        nn.Flatten(), nn.Sequential(nn.Linear(128 * 8 * 8, 512), nn.ReLU(), nn.Dropout(0.1)),
        nn.Linear(512, 100))
    return model, torch.randn(batch, 3, 64, 64), torch.randint(0, 100, (batch,)), \
        nn.CrossEntropyLoss()


MODELS: dict[str, Callable[[], Case]] = {"gpt": gpt, "resnet": resnet, "cnn-head": cnn_head}
