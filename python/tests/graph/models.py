"""Models as people write them, small enough to profile and run in a test.

Each ``make_*`` returns a :class:`Case`: the model, the call's positional and keyword
arguments, a loss with its target, and the split chainplan should find (stage names, in
order).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["CASES", "Case"]


@dataclass
class Case:
    """A model, a sample call, its loss and the expected split."""

    model: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    loss_fn: Callable[..., torch.Tensor]
    target: torch.Tensor
    names: list[str]
    side: list[str] = field(default_factory=list)


# --- GPT: ModuleList of blocks, causal mask argument, tied embeddings, dropout -------------

class CausalSelfAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.drop = nn.Dropout(0.1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for z in self.qkv(x).split(c, dim=2))
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return self.drop(self.proj(y.transpose(1, 2).reshape(b, t, c)))


class GPTBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(),
                                 nn.Linear(4 * width, width))

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    """nanoGPT's shape: blocks in a ModuleList looped over, the mask an argument, the
    output projection tied to the token embedding."""

    def __init__(self, vocab: int = 256, width: int = 32, heads: int = 4, blocks: int = 4,
                 seq: int = 16) -> None:
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq, width)
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.ModuleList([GPTBlock(width, heads) for _ in range(blocks)])
        self.ln_f = nn.LayerNorm(width)
        self.head = nn.Linear(width, vocab, bias=False)
        self.head.weight = self.wte.weight

    def forward(self, idx: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.ln_f(x)).flatten(0, 1)


def _halves(block: str) -> list[str]:
    """The two stages of a pre-norm block cut at its residual addition."""
    return [f"{block}.ln1+{block}.attn",
            "+".join(f"{block}.{m}" for m in ("ln2", "mlp.0", "mlp.1", "mlp.2"))]


def make_gpt(batch: int = 4, seq: int = 16, blocks: int = 4) -> Case:
    model = GPT(seq=seq, blocks=blocks)
    idx = torch.randint(0, 256, (batch, seq))
    mask = torch.ones(seq, seq, dtype=torch.bool).tril()
    # Each pre-norm block is cut at its residual addition (chainplan.graph.choose).
    names = ["wte+wpe+add+drop",
             *[n for i in range(blocks - 1) for n in _halves(f"blocks.{i}")],
             f"blocks.{blocks - 1}.ln1+blocks.{blocks - 1}.attn",
             f"blocks.{blocks - 1}.ln2+...+ln_f", "head:Linear"]
    return Case(model, (idx,), {"mask": mask}, F.cross_entropy,
                torch.randint(0, 256, (batch * seq,)), names, ["mask"])


# --- Llama: RMSNorm, rotary tables held as buffers, SwiGLU, a computed causal mask ---------

class RMSNorm(nn.Module):
    def __init__(self, width: int, eps: float = 1e-6) -> None:
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def _rotate(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class LlamaAttention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.q = nn.Linear(width, width, bias=False)
        self.k = nn.Linear(width, width, bias=False)
        self.v = nn.Linear(width, width, bias=False)
        self.o = nn.Linear(width, width, bias=False)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = (m(x).view(b, t, self.heads, c // self.heads).transpose(1, 2)
                   for m in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(_rotate(q, cos, sin), _rotate(k, cos, sin), v,
                                           attn_mask=mask)
        return self.o(y.transpose(1, 2).reshape(b, t, c))


class SwiGLU(nn.Module):
    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.gate = nn.Linear(width, hidden, bias=False)
        self.up = nn.Linear(width, hidden, bias=False)
        self.down = nn.Linear(hidden, width, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(F.silu(self.gate(x)) * self.up(x))


class LlamaBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.attn_norm = RMSNorm(width)
        self.attn = LlamaAttention(width, heads)
        self.mlp_norm = RMSNorm(width)
        self.mlp = SwiGLU(width, 3 * width)

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                mask: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin, mask)
        return x + self.mlp(self.mlp_norm(x))


class Llama(nn.Module):
    """Rotary tables are buffers sliced in forward (views: repeated in every stage); the
    additive causal mask is computed in forward and shared (a prelude side value)."""

    def __init__(self, vocab: int = 256, width: int = 32, heads: int = 4, layers: int = 4,
                 max_seq: int = 64) -> None:
        super().__init__()
        self.embed = nn.Embedding(vocab, width)
        self.layers = nn.ModuleList([LlamaBlock(width, heads) for _ in range(layers)])
        self.norm = RMSNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        half = width // heads // 2
        freqs = 1.0 / (10000 ** (torch.arange(half) / half))
        angles = torch.outer(torch.arange(max_seq).float(), freqs)
        self.register_buffer("cos", torch.cat((angles, angles), -1).cos(), persistent=False)
        self.register_buffer("sin", torch.cat((angles, angles), -1).sin(), persistent=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        t = idx.shape[1]
        cos, sin = self.cos[:t], self.sin[:t]
        mask = torch.full((t, t), float("-inf"), device=idx.device).triu(1)
        x = self.embed(idx)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return self.lm_head(self.norm(x)).flatten(0, 1)


def make_llama(batch: int = 4, seq: int = 16) -> Case:
    model = Llama()
    idx = torch.randint(0, 256, (batch, seq))
    names = ["embed:Embedding",
             *[n for i in range(4) for n in (f"layers.{i}.attn_norm+layers.{i}.attn",
                                            f"layers.{i}.mlp_norm+layers.{i}.mlp")],
             "norm:RMSNorm", "lm_head:Linear"]
    return Case(model, (idx,), {}, F.cross_entropy, torch.randint(0, 256, (batch * seq,)),
                names, ["triu"])


# --- ResNet: bottlenecks with forward() residuals, BatchNorm, in-place ReLU ----------------

class Bottleneck(nn.Module):
    """torchvision's bottleneck block, in-place additions and ReLUs included."""

    def __init__(self, cin: int, width: int, stride: int = 1) -> None:
        super().__init__()
        cout = 4 * width
        self.conv1 = nn.Conv2d(cin, width, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(width)
        self.conv2 = nn.Conv2d(width, width, 3, stride, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(width)
        self.conv3 = nn.Conv2d(width, cout, 1, bias=False)
        self.bn3 = nn.BatchNorm2d(cout)
        self.relu = nn.ReLU(inplace=True)
        self.downsample: nn.Module | None = None
        if stride != 1 or cin != cout:
            self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                            nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)))
        out = self.bn3(self.conv3(out))
        if self.downsample is not None:
            identity = self.downsample(x)
        out += identity
        return self.relu(out)


class ResNet(nn.Module):
    def __init__(self, classes: int = 10) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(2)
        self.layer1 = nn.Sequential(Bottleneck(16, 4), Bottleneck(16, 4))
        self.layer2 = nn.Sequential(Bottleneck(16, 8, stride=2), Bottleneck(32, 8))
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        x = self.layer2(self.layer1(x))
        return self.fc(torch.flatten(self.avgpool(x), 1))


def make_resnet(batch: int = 4) -> Case:
    names = ["conv1+bn1+relu+maxpool", "layer1.0:Bottleneck", "layer1.1:Bottleneck",
             "layer2.0:Bottleneck", "layer2.1+avgpool", "fc:Linear"]
    return Case(ResNet(), (torch.randn(batch, 3, 16, 16),), {}, F.cross_entropy,
                torch.randint(0, 10, (batch,)), names)


# --- ViT: patches, a class token and a position table, pre-norm blocks ---------------------

class ViTBlock(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, 2 * width), nn.GELU(),
                                 nn.Linear(2 * width, width))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class ViT(nn.Module):
    def __init__(self, width: int = 32, patch: int = 4, image: int = 16, depth: int = 3,
                 classes: int = 10) -> None:
        super().__init__()
        self.patch = nn.Conv2d(3, width, patch, patch)
        tokens = (image // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embed = nn.Parameter(0.02 * torch.randn(1, tokens + 1, width))
        self.blocks = nn.ModuleList([ViTBlock(width, 4) for _ in range(depth)])
        self.norm = nn.LayerNorm(width)
        self.head = nn.Linear(width, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.patch(x).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def make_vit(batch: int = 4) -> Case:
    names = ["patch:Conv2d", "cat+add", *_halves("blocks.0"), *_halves("blocks.1"),
             "blocks.2.ln1+blocks.2.attn", "blocks.2.ln2+...+norm", "head:Linear"]
    return Case(ViT(), (torch.randn(batch, 3, 16, 16),), {}, F.cross_entropy,
                torch.randint(0, 10, (batch,)), names)


# --- U-Net: long skips from the encoder to the decoder --------------------------------------

class DoubleConv(nn.Sequential):
    def __init__(self, cin: int, cout: int) -> None:
        super().__init__(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1), nn.ReLU())


class UNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.enc1, self.enc2, self.mid = DoubleConv(3, 8), DoubleConv(8, 16), DoubleConv(16, 32)
        self.pool = nn.MaxPool2d(2)
        self.up2, self.dec2 = nn.ConvTranspose2d(32, 16, 2, 2), DoubleConv(32, 16)
        self.up1, self.dec1 = nn.ConvTranspose2d(16, 8, 2, 2), DoubleConv(16, 8)
        self.out = nn.Conv2d(8, 2, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(x)
        e2 = self.enc2(self.pool(e1))
        m = self.mid(self.pool(e2))
        d2 = self.dec2(torch.cat([self.up2(m), e2], dim=1))
        return self.out(self.dec1(torch.cat([self.up1(d2), e1], dim=1)))


def make_unet(batch: int = 2) -> Case:
    names = ["enc1.0+enc1.1+enc1.2+enc1.3", "pool+...+up1", "dec1.0+dec1.1", "dec1.2+dec1.3+out"]
    return Case(UNet(), (torch.randn(batch, 3, 16, 16),), {}, F.mse_loss,
                torch.randn(batch, 2, 16, 16), names)


# --- An MLP with dropout and keyword arguments (a tensor and a number) ----------------------

class ScaledMLP(nn.Module):
    def __init__(self, width: int = 32) -> None:
        super().__init__()
        self.fc1, self.fc2, self.fc3 = (nn.Linear(width, width) for _ in range(3))
        self.fc4 = nn.Linear(width, 10)
        self.drop = nn.Dropout(0.25)

    def forward(self, x: torch.Tensor, *, scale: torch.Tensor,
                temperature: float = 1.0) -> torch.Tensor:
        x = self.drop(torch.relu(self.fc1(x))) * scale
        x = self.drop(torch.relu(self.fc2(x))) * scale
        x = self.drop(torch.relu(self.fc3(x))) * scale
        return self.fc4(x) / temperature


def make_mlp(batch: int = 8) -> Case:
    names = ["fc1+relu+drop+mul", "fc2+relu+drop+mul", "fc3+relu+drop+mul", "fc4+div"]
    return Case(ScaledMLP(), (torch.randn(batch, 32),),
                {"scale": torch.rand(32) + 0.5, "temperature": 2.0}, F.cross_entropy,
                torch.randint(0, 10, (batch,)), names, ["scale"])


# --- A denoiser: a timestep embedding computed once, read by every block -------------------

class TimeBlock(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.fc1 = nn.Linear(width, 2 * width)
        self.emb = nn.Linear(width, 2 * width)
        self.fc2 = nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor, temb: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(F.silu(self.fc1(self.norm(x)) + self.emb(temb)))


class Denoiser(nn.Module):
    """A diffusion-style denoiser: the timestep's embedding goes through an MLP (trained
    weights: the side value needs a gradient) and conditions every block."""

    def __init__(self, width: int = 32, blocks: int = 3) -> None:
        super().__init__()
        self.width = width
        self.inp = nn.Linear(16, width)
        self.time = nn.Sequential(nn.Linear(width, width), nn.SiLU(), nn.Linear(width, width))
        self.blocks = nn.ModuleList([TimeBlock(width) for _ in range(blocks)])
        self.out = nn.Linear(width, 16)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        half = self.width // 2
        freqs = torch.exp(-9.21 * torch.arange(half, device=t.device) / half)
        angles = t[:, None] * freqs[None]
        temb = self.time(torch.cat([angles.sin(), angles.cos()], dim=-1))[:, None, :]
        h = self.inp(x)
        for block in self.blocks:
            h = block(h, temb)
        return self.out(h)


def make_denoiser(batch: int = 4) -> Case:
    names = ["inp:Linear", "blocks.0:TimeBlock", "blocks.1:TimeBlock", "blocks.2:TimeBlock",
             "out:Linear"]
    return Case(Denoiser(), (torch.randn(batch, 8, 16),), {"t": torch.rand(batch) * 1000},
                F.mse_loss, torch.randn(batch, 8, 16), names, ["linear_1"])


CASES: dict[str, Callable[[], Case]] = {
    "gpt": make_gpt, "llama": make_llama, "resnet": make_resnet, "vit": make_vit,
    "unet": make_unet, "mlp": make_mlp, "denoiser": make_denoiser,
}
