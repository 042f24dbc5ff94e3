"""What a user would compare chainplan with: PyTorch's own checkpointing, applied to a model.

* ``checkpoint_sequential(k)`` on a chain of declared stages;
* ``grouped(k)``: the same idea on a model whose blocks sit in a ModuleList (checkpoint
  consecutive groups of blocks, the last group not checkpointed, as checkpoint_sequential
  does);
* ``per-block``: every block under non-reentrant ``torch.utils.checkpoint`` (what
  HuggingFace's ``gradient_checkpointing_enable()`` does);
* ``per-block SAC``: selective activation checkpointing of every block
  (``torch.utils.checkpoint.create_selective_checkpoint_contexts``) saving the outputs of
  the matrix products, the attention kernels and the convolutions, recomputing the rest;
* ``fused_head``: any of them (or the plain model) with a language model's head and loss
  replaced by chainplan's fused, chunked ``linear_cross_entropy``, which a user can call
  without a plan: what the fused head adds is then measured apart from what the plan adds.

Each builder returns a deep copy of the model with the wrapping applied; the copies train
like the model (same parameters' values), and their measured peaks exclude parameters.
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

import torch
import torch.utils.checkpoint as tuc
from torch import nn

from chainplan.runtime.linearloss import linear_cross_entropy

__all__ = ["FusedHead", "fused_head", "grouped", "per_block", "sac_policy"]

_SAVE = {
    torch.ops.aten.mm.default, torch.ops.aten.addmm.default, torch.ops.aten.bmm.default,
    torch.ops.aten.convolution.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
    torch.ops.aten._scaled_dot_product_cudnn_attention.default,
}


def sac_policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> tuc.CheckpointPolicy:
    """Save matrix products, attention and convolutions; recompute everything else."""
    if op in _SAVE:
        return tuc.CheckpointPolicy.MUST_SAVE
    return tuc.CheckpointPolicy.PREFER_RECOMPUTE


class _Checkpointed(nn.Module):
    """A block run under non-reentrant checkpointing (with an optional SAC policy)."""

    def __init__(self, block: nn.Module, sac: bool) -> None:
        super().__init__()
        self.block = block
        self.sac = sac

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        ctx = {}
        if self.sac:
            ctx["context_fn"] = partial(tuc.create_selective_checkpoint_contexts, sac_policy)
        return tuc.checkpoint(self.block, *args, use_reentrant=False, **ctx, **kwargs)


class _Group(nn.Module):
    """Several consecutive blocks run as one checkpointed segment."""

    def __init__(self, blocks: list[nn.Module], checkpointed: bool) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.checkpointed = checkpointed

    def _run(self, x: torch.Tensor, *rest: Any) -> torch.Tensor:
        for b in self.blocks:
            x = b(x, *rest)
        return x

    def forward(self, x: torch.Tensor, *rest: Any) -> torch.Tensor:
        if self.checkpointed:
            return tuc.checkpoint(self._run, x, *rest, use_reentrant=False)  # type: ignore[no-any-return]
        return self._run(x, *rest)


class _Pass(nn.Module):
    """A block folded into the group before it: passes its input on."""

    def forward(self, x: torch.Tensor, *_rest: Any) -> torch.Tensor:
        return x


def _set(model: nn.Module, name: str, module: nn.Module) -> None:
    parent, _, attr = name.rpartition(".")
    owner = model.get_submodule(parent) if parent else model
    if isinstance(owner, (nn.ModuleList, nn.Sequential)) and attr.isdigit():
        owner[int(attr)] = module
    else:
        setattr(owner, attr, module)


def per_block(model: nn.Module, blocks: list[str], *, sac: bool = False) -> nn.Module:
    """A copy of ``model`` whose blocks run under checkpointing (SAC with ``sac``)."""
    out = copy.deepcopy(model)
    for name in blocks:
        _set(out, name, _Checkpointed(out.get_submodule(name), sac))
    return out


def grouped(model: nn.Module, blocks: list[str], k: int) -> nn.Module:
    """A copy of ``model`` whose consecutive blocks form ``k`` segments, each checkpointed
    but the last (``checkpoint_sequential``'s rule); the blocks must be called one after
    the other with the same extra arguments (a transformer's ModuleList)."""
    out = copy.deepcopy(model)
    mods = [out.get_submodule(n) for n in blocks]
    size = len(mods) // k
    starts = [j * size for j in range(k)]
    for j, lo in enumerate(starts):
        hi = starts[j + 1] if j + 1 < k else len(mods)
        _set(out, blocks[lo], _Group(mods[lo:hi], checkpointed=j + 1 < k))
        for i in range(lo + 1, hi):
            _set(out, blocks[i], _Pass())
    return out


class _Hidden(nn.Module):
    """Stands where the head was: passes the hidden states on (the head's parameters stay
    with :class:`FusedHead`, which applies them inside the fused loss)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x


class FusedHead(nn.Module):
    """``model`` with its linear head moved into the loss: ``forward(*args, labels,
    **kwargs)`` returns ``{"loss": linear_cross_entropy(hidden, W, b, labels)}``, the
    model's cross-entropy over its head's logits, never holding them whole."""

    def __init__(self, model: nn.Module, head: str) -> None:
        super().__init__()
        lin = model.get_submodule(head)
        if not isinstance(lin, nn.Linear):
            raise TypeError(f"fused_head: {head} is a {type(lin).__name__}, not an nn.Linear")
        _set(model, head, _Hidden())
        self.model = model
        self.head = lin  # the same parameters (a tied head stays tied to its embedding)

    def forward(self, *args: Any, labels: torch.Tensor, **kwargs: Any) -> dict[str, torch.Tensor]:
        h = self.model(*args, **kwargs)
        return {"loss": linear_cross_entropy(h, self.head.weight, self.head.bias, labels)}


def fused_head(model: nn.Module, head: str) -> FusedHead:
    """``model`` itself (not a copy: apply it to what :func:`per_block` or :func:`grouped`
    returned, or to a deep copy) with its head ``head`` fused into the loss."""
    return FusedHead(model, head)
