"""What torchtitan offers for activation memory on one device, applied to a model's blocks
(torchtitan's ``activation_checkpoint`` settings, written here with PyTorch's own API):

* ``full``: every block under non-reentrant checkpointing;
* ``op``: selective checkpointing per operation: every block under checkpointing with a
  policy that saves the outputs of the operations on its save list (matrix products and the
  fused attention kernels) and recomputes everything else, except that every second matrix
  product of a block is recomputed too (torchtitan's rule, to save memory);
* ``layer``: selective checkpointing per layer: every second block (the second, the
  fourth, ...: torchtitan counts the blocks it wraps from one) fully checkpointed, the
  others not (``selective_ac_option = "2"``).

``torch.compile`` with an ``activation_memory_budget`` is the fourth (bench/large/main.py
sets the budget before compiling).
"""

from __future__ import annotations

import copy
from collections import defaultdict
from functools import partial
from typing import Any

import torch
import torch.utils.checkpoint as tuc
from torch import nn

__all__ = ["SAVE", "apply"]

#: The operations whose outputs the per-operation mode saves (torchtitan's save list on one
#: device: the collectives are absent, and so is the float8 ``max``).
SAVE = {
    torch.ops.aten.mm.default,
    torch.ops.aten._scaled_dot_product_efficient_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention.default,
    torch.ops.aten._scaled_dot_product_cudnn_attention.default,
    torch.ops.aten._scaled_dot_product_flash_attention_for_cpu.default,
}


def _policy(counts: dict[str, int], ctx: Any, op: Any, *args: Any,
            **kwargs: Any) -> tuc.CheckpointPolicy:
    """Save the save list's outputs but every second matrix product's (counted apart in
    the forward and in the recomputation, so both choose alike)."""
    phase = "recompute" if ctx.is_recompute else "forward"
    if op == torch.ops.aten.mm.default:
        counts[phase] += 1
        if counts[phase] % 2 == 0:
            return tuc.CheckpointPolicy.PREFER_RECOMPUTE
    if op in SAVE:
        return tuc.CheckpointPolicy.MUST_SAVE
    return tuc.CheckpointPolicy.PREFER_RECOMPUTE


def _contexts() -> Any:
    return tuc.create_selective_checkpoint_contexts(  # type: ignore[no-untyped-call]
        partial(_policy, defaultdict(int)))


class _Checkpointed(nn.Module):
    def __init__(self, block: nn.Module, selective: bool) -> None:
        super().__init__()
        self.block = block
        self.selective = selective

    def forward(self, *args: Any) -> Any:
        ctx = {"context_fn": _contexts} if self.selective else {}
        return tuc.checkpoint(self.block, *args, use_reentrant=False, **ctx)  # type: ignore[call-overload]


def apply(model: nn.Module, mode: str, blocks: str = "layers") -> nn.Module:
    """A deep copy of ``model`` whose ModuleList ``blocks`` is checkpointed in ``mode``
    (``full``, ``op`` or ``layer``, module docstring)."""
    if mode not in ("full", "op", "layer"):
        raise ValueError(f"mode {mode!r}: one of full, op, layer")
    out = copy.deepcopy(model)
    layers = out.get_submodule(blocks)
    assert isinstance(layers, nn.ModuleList)
    for i, block in enumerate(layers):
        if mode == "layer" and (i + 1) % 2:
            continue
        layers[i] = _Checkpointed(block, selective=mode == "op")
    return out
