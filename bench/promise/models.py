"""The benchmark's models, as people write them, each with a sample call, a loss and the
modules PyTorch's own checkpointing wraps ("blocks").

* ``gpt``: nanoGPT's shape (blocks in a ModuleList, a mask argument, a tied 8192-word head),
  the tests' GPT at width 128, 4 blocks, sequence 64, batch 8;
* ``llama``: a Llama-like decoder (RMSNorm, rotary tables, SwiGLU), the tests' at width 128;
* ``decoder``: the same Llama at width 256, 6 layers, sequence 128, batch 4, with a 512-word
  vocabulary, so that its head does not dominate the step (not in the default run's table);
* ``resnet``: the tests' bottleneck ResNet (in-place additions and ReLUs) on 64x64 images;
* ``vit``: the tests' ViT at width 128 on 32x32 images;
* ``cnn-head``: the 26-stage CNN (wide early convolutions, a classifier head), an
  ``nn.Sequential`` of declared stages.

The first four are captured from their graph by chainplan (stages cut where every path
crosses, operation-level options); the last is the chain of its stages.

``--size large`` (for a GPU, where the small models' steps of a few milliseconds are bound by
kernel launches) scales each model to a step of tens of milliseconds on one H100/H200: the
GPT at width 768, 12 heads, 8 blocks, sequence 512, batch 8 (a 32768-word head); the Llama at
width 1024, 16 heads, 8 layers, sequence 512, batch 8; the ResNet on 128x128 images in
batches of 128; the ViT at width 768, 8 blocks, 224x224 images in 16x16 patches, batch 64;
the CNN in batches of 128.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
from tests.graph.models import GPT, Llama, ResNet, ViT  # noqa: E402

__all__ = ["DEFAULT", "MODELS", "Bench"]


@dataclass
class Bench:
    """A model, a sample call, its loss, and what per-block checkpointing wraps."""

    model: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    loss_fn: Callable[..., torch.Tensor]
    target: torch.Tensor
    blocks: list[str]  # module names: what per-block (and grouped) checkpointing wraps
    transformer: bool = False
    sequential: bool = False  # a chain of declared stages (checkpoint_sequential applies)
    # a language model's linear head (module name), whose cross-entropy the alternatives
    # also run fused (bench/promise/systems.py, fused_head); empty when there is none
    head: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


LARGE = "large"


def gpt(size: str = "small") -> Bench:
    vocab, seq, batch, width, heads, depth = 8192, 64, 8, 128, 4, 4
    if size == LARGE:
        vocab, seq, width, heads, depth = 32768, 512, 768, 12, 8
    model = GPT(vocab=vocab, width=width, heads=heads, blocks=depth, seq=seq)
    idx = torch.randint(0, vocab, (batch, seq))
    mask = torch.ones(seq, seq, dtype=torch.bool).tril()
    return Bench(model, (idx,), {"mask": mask}, F.cross_entropy,
                 torch.randint(0, vocab, (batch * seq,)), [f"blocks.{i}" for i in range(depth)],
                 transformer=True, head="head")


def llama(size: str = "small", small: tuple[int, ...] = (8192, 64, 8, 128, 4, 4),
          large: tuple[int, ...] = (32000, 512, 8, 1024, 16, 8)) -> Bench:
    """The Llama, its (vocab, seq, batch, width, heads, depth) by size."""
    vocab, seq, batch, width, heads, depth = large if size == LARGE else small
    model = Llama(vocab=vocab, width=width, heads=heads, layers=depth, max_seq=seq)
    idx = torch.randint(0, vocab, (batch, seq))
    return Bench(model, (idx,), {}, F.cross_entropy, torch.randint(0, vocab, (batch * seq,)),
                 [f"layers.{i}" for i in range(depth)], transformer=True, head="lm_head")


def decoder(size: str = "small") -> Bench:
    """A Llama-like decoder whose head does not dominate (a 512-word vocabulary): the gain
    must come from inside and between the blocks (issue 36's CPU target)."""
    return llama(size, (512, 128, 4, 256, 4, 6), (2048, 1024, 8, 1024, 16, 12))


def resnet(size: str = "small") -> Bench:
    batch, image = (128, 128) if size == LARGE else (16, 64)
    return Bench(ResNet(), (torch.randn(batch, 3, image, image),), {}, F.cross_entropy,
                 torch.randint(0, 10, (batch,)),
                 ["layer1.0", "layer1.1", "layer2.0", "layer2.1"])


def vit(size: str = "small") -> Bench:
    width, patch, image, depth, batch = 128, 4, 32, 4, 32
    if size == LARGE:
        width, patch, image, depth, batch = 768, 16, 224, 8, 64
    model = ViT(width=width, patch=patch, image=image, depth=depth)
    return Bench(model, (torch.randn(batch, 3, image, image),), {}, F.cross_entropy,
                 torch.randint(0, 10, (batch,)), [f"blocks.{i}" for i in range(depth)],
                 transformer=True)


def conv(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.BatchNorm2d(cout), nn.ReLU())


def cnn_head(size: str = "small") -> Bench:
    """Wide early convolutions at full resolution, narrower ones after each pooling, and a
    two-layer classifier head: 26 stages once nested Sequentials are flattened."""
    model = nn.Sequential(
        conv(3, 32), conv(32, 32), nn.MaxPool2d(2),
        conv(32, 64), conv(64, 64), nn.MaxPool2d(2),
        conv(64, 128), conv(128, 128), nn.MaxPool2d(2),
        nn.Flatten(), nn.Sequential(nn.Linear(128 * 8 * 8, 512), nn.ReLU(), nn.Dropout(0.1)),
        nn.Linear(512, 100))
    batch = 128 if size == LARGE else 16
    return Bench(model, (torch.randn(batch, 3, 64, 64),), {}, F.cross_entropy,
                 torch.randint(0, 100, (batch,)), ["0", "1", "3", "4", "6", "7"],
                 sequential=True)


SIZES = ("small", LARGE)
MODELS: dict[str, Callable[[str], Bench]] = {
    "gpt": gpt, "llama": llama, "resnet": resnet, "vit": vit, "cnn-head": cnn_head,
    "decoder": decoder}
# The default run's models (docs/promise-bench.md); the decoder is run on its own.
DEFAULT = ("gpt", "llama", "resnet", "vit", "cnn-head")
