"""The large benchmark's model: a Llama-style decoder as torchtitan's llama3 writes it.

Token embedding, ``layers`` blocks in a ModuleList (RMSNorm, attention with rotary
embeddings and PyTorch's fused causal attention, RMSNorm, SwiGLU MLP, residual additions),
a final RMSNorm and an untied linear head over the vocabulary; ``forward(idx)`` returns the
logits of every token, ``(batch * seq, vocab)``.

Sizes (:data:`CONFIGS`): ``1b``, width 2048, 16 layers, 16 heads of 128, SwiGLU hidden 5632,
a 32000-word vocabulary, sequence 2048: 0.95 billion parameters (the shape of a Llama-3.2-1B
with Llama 2's vocabulary); ``tiny`` the same shape at width 64, for the CPU test.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CONFIGS", "Config", "Decoder"]


@dataclass(frozen=True)
class Config:
    vocab: int
    width: int
    layers: int
    heads: int
    hidden: int
    seq: int


CONFIGS = {
    "1b": Config(vocab=32000, width=2048, layers=16, heads=16, hidden=5632, seq=2048),
    "tiny": Config(vocab=512, width=64, layers=4, heads=4, hidden=172, seq=64),
}


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Attention(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.heads = c.heads
        self.wq = nn.Linear(c.width, c.width, bias=False)
        self.wk = nn.Linear(c.width, c.width, bias=False)
        self.wv = nn.Linear(c.width, c.width, bias=False)
        self.wo = nn.Linear(c.width, c.width, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = (m(x).view(b, t, self.heads, d // self.heads).transpose(1, 2)
                   for m in (self.wq, self.wk, self.wv))
        y = F.scaled_dot_product_attention(_rotate(q, cos, sin), _rotate(k, cos, sin), v,
                                           is_causal=True)
        return self.wo(y.transpose(1, 2).reshape(b, t, d))  # type: ignore[no-any-return]


class FeedForward(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.w1 = nn.Linear(c.width, c.hidden, bias=False)
        self.w3 = nn.Linear(c.width, c.hidden, bias=False)
        self.w2 = nn.Linear(c.hidden, c.width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w2(F.silu(self.w1(x)) * self.w3(x))  # type: ignore[no-any-return]


class Block(nn.Module):
    def __init__(self, c: Config) -> None:
        super().__init__()
        self.attention_norm = nn.RMSNorm(c.width, eps=1e-5)
        self.attention = Attention(c)
        self.ffn_norm = nn.RMSNorm(c.width, eps=1e-5)
        self.feed_forward = FeedForward(c)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attention(self.attention_norm(x), cos, sin)
        return x + self.feed_forward(self.ffn_norm(x))  # type: ignore[no-any-return]


class Decoder(nn.Module):
    """The decoder (module docstring); its blocks are ``layers.0`` ... and its head
    ``lm_head``."""

    cos: torch.Tensor  # the rotary embedding's tables, buffers
    sin: torch.Tensor

    def __init__(self, c: Config) -> None:
        super().__init__()
        self.tok_embeddings = nn.Embedding(c.vocab, c.width)
        self.layers = nn.ModuleList([Block(c) for _ in range(c.layers)])
        self.norm = nn.RMSNorm(c.width, eps=1e-5)
        self.lm_head = nn.Linear(c.width, c.vocab, bias=False)
        half = c.width // c.heads // 2
        freqs = 1.0 / (500000 ** (torch.arange(half) / half))
        angles = torch.outer(torch.arange(c.seq).float(), freqs)
        self.register_buffer("cos", torch.cat((angles, angles), -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((angles, angles), -1).sin(), persistent=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        cos, sin = self.cos[:t], self.sin[:t]
        x = self.tok_embeddings(idx)
        for layer in self.layers:
            x = layer(x, cos, sin)
        return self.lm_head(self.norm(x)).flatten(0, 1)  # type: ignore[no-any-return]
