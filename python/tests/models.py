"""Small real models used across the tests: chains the executors must run transparently."""

from __future__ import annotations

import torch
from torch import nn

__all__ = ["vgg_like", "resnet_like", "transformer_like", "gpt_like", "CheckpointSequential",
           "MODELS"]


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


class Embed(nn.Module):
    """Token and position embeddings of a small GPT."""

    def __init__(self, vocab: int, width: int, seq: int) -> None:
        super().__init__()
        self.tok = nn.Embedding(vocab, width)
        self.pos = nn.Embedding(seq, width)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))


class Block(nn.Module):
    """A pre-norm causal Transformer block."""

    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n = x.shape[1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=x.device), 1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Head(nn.Module):
    """Final norm and the vocabulary projection; logits flattened for cross-entropy."""

    def __init__(self, width: int, vocab: int) -> None:
        super().__init__()
        self.ln = nn.LayerNorm(width)
        self.out = nn.Linear(width, vocab, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.ln(x)).flatten(0, 1)


def gpt_like(vocab: int = 1024, width: int = 32, blocks: int = 4, seq: int = 32,
             batch: int = 4) -> tuple[nn.Sequential, torch.Tensor, torch.Tensor]:
    """A small GPT as a chain, with a head much larger than a block's output (the logits).

    Returns the model, token ids and next-token targets (one per position).
    """
    model = nn.Sequential(Embed(vocab, width, seq), *[Block(width, 4) for _ in range(blocks)],
                          Head(width, vocab))
    x = torch.randint(0, vocab, (batch, seq))
    y = torch.randint(0, vocab, (batch * seq,))
    return model, x, y


class CheckpointSequential(nn.Module):
    """PyTorch's own checkpointing of a chain (``checkpoint_sequential``), for comparison."""

    def __init__(self, model: nn.Sequential, segments: int) -> None:
        super().__init__()
        self.model, self.segments = model, segments

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        from torch.utils.checkpoint import checkpoint_sequential

        out: torch.Tensor = checkpoint_sequential(self.model, self.segments, x,
                                                  use_reentrant=False)
        return out
