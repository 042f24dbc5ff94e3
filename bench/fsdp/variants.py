"""The ways a user trains a transformer under FSDP2 (``fully_shard`` on every block, then on
the root), each built on its own copy of the same model:

* ``FSDP2``: no checkpointing;
* ``FSDP2, no reshard``: no checkpointing, the blocks sharded with
  ``reshard_after_forward=False`` (each block gathered once per step, as chainplan's
  executor gathers them: the same collectives, so chainplan is not credited with them);
* ``FSDP2 + per-block AC``: every block under ``checkpoint_wrapper`` (non-reentrant
  ``torch.utils.checkpoint``), as torchtitan's ``apply_ac`` does in "full" mode;
* ``FSDP2 + per-op SAC``: every block under ``checkpoint_wrapper`` with a
  ``create_selective_checkpoint_contexts`` policy saving torchtitan's save list (matrix
  products, the attention kernels, reduce-scatter) and recomputing the rest;
* ``FSDP2 + per-op SAC (torchtitan)``: the same list, but every second ``mm`` recomputed,
  as torchtitan's op-level policy does;
* ``FSDP2 + compile``: every block compiled (``block.compile()``) before ``fully_shard``,
  under ``torch._functorch.config.activation_memory_budget`` (set by the session, one value
  per process: the partitioner's choice is cached by the compiled code);
* ``chainplan``: ``plan.wrap(model)`` of a plan of the rank's own profile, then
  ``fully_shard`` (docs/distributed.md, "Composing under a model the user wrapped").

Blocks are wrapped in torchtitan's order: checkpointing, then compile, then ``fully_shard``.
An ``nn.Sequential`` model (the chain form) has every stage sharded, and its plan is made
on ``chainplan.shardchain.sharded_chain``'s chain: FSDP2's own hooks gather a stage
whenever the plan runs it (bench/fsdp/ranks.py).
"""

from __future__ import annotations

import copy
from functools import partial
from typing import Any

import torch
import torch.utils.checkpoint as tuc
from torch import nn

__all__ = ["SAVE", "build", "shard"]

_aten = torch.ops.aten
SAVE = {  # torchtitan's _save_list, with the CPU's attention kernels and addmm/bmm
    _aten.mm.default, _aten.addmm.default, _aten.bmm.default,
    _aten._scaled_dot_product_flash_attention_for_cpu.default,
    _aten._scaled_dot_product_efficient_attention.default,
    _aten._scaled_dot_product_flash_attention.default,
    _aten._scaled_dot_product_cudnn_attention.default,
    _aten._scaled_dot_product_attention_math.default,
    torch.ops._c10d_functional.reduce_scatter_tensor.default,
    _aten.max.default,
}


def _save_all(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> tuc.CheckpointPolicy:
    if op in SAVE:
        return tuc.CheckpointPolicy.MUST_SAVE
    return tuc.CheckpointPolicy.PREFER_RECOMPUTE


def _every_second_mm() -> Any:
    """torchtitan's op-level policy: the save list, but every second ``mm`` recomputed
    (counted separately in the forward and in the recomputation, so both agree)."""
    counts = {"forward": 0, "recompute": 0}

    def policy(ctx: Any, op: Any, *args: Any, **kwargs: Any) -> tuc.CheckpointPolicy:
        mode = "recompute" if ctx.is_recompute else "forward"
        if op == _aten.mm.default or op == _aten.addmm.default:
            counts[mode] += 1
            if counts[mode] % 2 == 0:
                return tuc.CheckpointPolicy.PREFER_RECOMPUTE
        return _save_all(ctx, op)

    return policy


def _sac_context(torchtitan: bool) -> Any:
    if torchtitan:
        return tuc.create_selective_checkpoint_contexts(_every_second_mm())
    return tuc.create_selective_checkpoint_contexts(_save_all)


def shard(model: nn.Module, blocks: Any, reshard: bool = True) -> None:
    """torchtitan's order: fully_shard every block (or stage), then the root."""
    from torch.distributed.fsdp import fully_shard

    for block in blocks:
        fully_shard(block, reshard_after_forward=reshard)
    fully_shard(model)


def _blocks(net: nn.Module) -> tuple[Any, range]:
    """What ``fully_shard`` shards one by one (a ModuleList GPT's blocks; every stage of an
    ``nn.Sequential``, as a chain's plan calls them) and which of those are the transformer
    blocks that checkpointing and compile wrap (a Sequential's stages but the first and
    the last: the embedding and the head)."""
    if isinstance(net, nn.Sequential):
        return net, range(1, len(net) - 1)
    return net.blocks, range(len(net.blocks))


def build(kind: str, model: nn.Module, **options: Any) -> nn.Module:
    """A sharded copy of ``model`` trained the way ``kind`` names (module docstring).
    ``options``: ``plan`` and ``gathered`` (chainplan: ``set_gathering``'s mode)."""
    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

    net = copy.deepcopy(model)
    if kind == "chainplan":
        from chainplan.executors.fsdp import set_gathering

        net = options["plan"].wrap(net)
        set_gathering(net, options.get("gathered", "step"))
    container, which = _blocks(net)
    if kind in ("per-block", "sac", "sac-torchtitan"):
        for i in which:
            extra = ({} if kind == "per-block" else
                     {"context_fn": partial(_sac_context, kind == "sac-torchtitan")})
            container[i] = checkpoint_wrapper(container[i], preserve_rng_state=False, **extra)
    elif kind == "compile":
        for i in which:
            container[i].compile()
    elif kind not in ("plain", "no-reshard", "chainplan"):
        raise ValueError(f"bench/fsdp: unknown variant kind {kind!r}")
    shard(net, container, reshard=kind != "no-reshard")
    return net
