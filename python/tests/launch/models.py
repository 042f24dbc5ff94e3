"""Small models of the launch tests, the same on every rank and in the parent process."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

VOCAB, WIDTH, HEADS, SEQ = 32, 16, 4, 8


class Attention(nn.Module):
    def __init__(self, heads: int = HEADS) -> None:
        super().__init__()
        self.n_heads = heads
        # No biases (as Llama's): the key's bias has a zero gradient up to rounding, which
        # AdamW's normalisation turns into full steps of noise.
        self.q, self.k, self.v, self.o = (nn.Linear(WIDTH, WIDTH, bias=False) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (f(x).view(b, t, self.n_heads, -1).transpose(1, 2)
                   for f in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


class FusedAttention(nn.Module):
    """nanoGPT's: one linear for queries, keys and values (tensor parallelism refuses it)."""

    def __init__(self) -> None:
        super().__init__()
        self.n_head = HEADS
        self.c_attn, self.c_proj = nn.Linear(WIDTH, 3 * WIDTH), nn.Linear(WIDTH, WIDTH)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        q, k, v = self.c_attn(x).chunk(3, dim=-1)
        b, t, _ = x.shape
        q, k, v = (z.view(b, t, self.n_head, -1).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.c_proj(y.transpose(1, 2).reshape(b, t, -1))


class Block(nn.Module):
    def __init__(self, attention: nn.Module) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(WIDTH), nn.LayerNorm(WIDTH)
        self.attn = attention
        self.up, self.gate, self.down = (nn.Linear(WIDTH, 2 * WIDTH), nn.Linear(WIDTH, 2 * WIDTH),
                                         nn.Linear(2 * WIDTH, WIDTH))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        h = self.ln2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h))


class GPT(nn.Module):
    """A transformer written with a ModuleList of blocks."""

    def __init__(self, layers: int = 2, heads: int = HEADS, fused: bool = False) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.emb = nn.Embedding(VOCAB, WIDTH)
        self.blocks = nn.ModuleList(Block(FusedAttention() if fused else Attention(heads))
                                    for _ in range(layers))
        self.norm, self.head = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        x = self.emb(idx)
        for b in self.blocks:
            x = b(x)
        return self.head(self.norm(x))


class Layer(nn.Module):
    """One layer of the chain (not an nn.Sequential, which the chain would flatten)."""

    def __init__(self, width: int = WIDTH) -> None:
        super().__init__()
        self.linear = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.linear(x))


class Embed(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, WIDTH)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        return self.emb(idx)


class Head(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm, self.out = nn.LayerNorm(WIDTH), nn.Linear(WIDTH, VOCAB)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(x))


def gpt_chain(layers: int = 4) -> nn.Sequential:
    """The transformer as a chain (embedding, blocks, head): what a pipeline cuts."""
    torch.manual_seed(0)
    return nn.Sequential(Embed(), *(Block(Attention()) for _ in range(layers)), Head())


#: The chain of the memory case: wide enough that the plan's terms, not a step's fixed
#: few kilobytes (the loss, the transfers' metadata), make its peak.
WIDE = 128


def chain(layers: int = 6, width: int = WIDTH) -> nn.Sequential:
    """A chain of ``layers`` layers for the pipeline cases."""
    torch.manual_seed(0)
    return nn.Sequential(*(Layer(width) for _ in range(layers)))


def lm_loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.flatten(0, 1), target.flatten())


def mse(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.mse_loss(out, target)


def data(kind: str, batch: int, steps: int) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """``steps`` global batches of ``batch`` samples."""
    gen = torch.Generator().manual_seed(5)
    if kind in ("gpt", "llama", "gptchain"):
        return [(torch.randint(0, VOCAB, (batch, SEQ), generator=gen),
                 torch.randint(0, VOCAB, (batch, SEQ), generator=gen)) for _ in range(steps)]
    width = WIDE if kind == "wide" else WIDTH
    return [(torch.randn(batch, width, generator=gen), torch.randn(batch, width, generator=gen))
            for _ in range(steps)]


def llama() -> nn.Module:
    """A tiny HuggingFace Llama: its config's base_model_tp_plan splits it."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    return LlamaForCausalLM(LlamaConfig(
        vocab_size=VOCAB, hidden_size=WIDTH, intermediate_size=2 * WIDTH, num_hidden_layers=2,
        num_attention_heads=HEADS, num_key_value_heads=2, max_position_embeddings=SEQ,
        attn_implementation="sdpa"))


def hf_loss(out: Any, target: torch.Tensor) -> torch.Tensor:
    return lm_loss(out.logits, target)


def build(kind: str) -> nn.Module:
    if kind == "wide":
        return chain(width=WIDE)
    return {"gpt": GPT, "llama": llama, "chain": chain, "gptchain": gpt_chain}[kind]()


def loss_of(kind: str, pipeline: bool = False) -> Any:
    """The loss of ``kind``'s output; a pipeline's last stage gives the loss the chain's
    end (a HuggingFace model's logits, not its output object)."""
    if pipeline and kind == "llama":
        return lm_loss
    return {"gpt": lm_loss, "llama": hf_loss, "chain": mse, "wide": mse,
            "gptchain": lm_loss}[kind]


def reference(kind: str, batch: int, steps: int) -> tuple[list[float], dict[str, torch.Tensor]]:
    """One process on the global batch: each step's loss, and the parameters after."""
    model = build(kind)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    for x, y in data(kind, batch, steps):
        opt.zero_grad()
        loss = loss_of(kind)(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {n: p.detach().clone() for n, p in model.named_parameters()}
