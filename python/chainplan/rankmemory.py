"""A rank's memory under sharded or replicated data parallelism: what is not activations.

chainplan's planners (rotor, rotor-ops, pofo, ...) plan a chain's *activations* within a
budget. A rank of a data-parallel job holds more than that: its share of the parameters,
gradients and optimizer state, the unsharded parameters FSDP gathers for the unit it
computes (and the one it prefetches), the reduce-scatter and all-reduce buffers, DDP's
gradient buckets. :func:`rank_memory` counts all of it in one place, and
:meth:`RankMemory.activation_budget` is what is left of a device for the plan::

    mem = chainplan.sharded.rank_memory(model, world=2)      # units: the model's fully_shard
    plan = chainplan.plan(prof, budget=mem.activation_budget("8GiB"))
    # the rank's planned peak: mem.fixed_bytes + plan.peak_bytes

The terms, per rank, for a model of ``P`` parameter bytes cut into wrapping units
``u_1 .. u_n`` (``fully_shard`` on each, the rest belonging to the root), sharded over
``shard`` ranks and replicated over ``world / shard`` (HSDP; plain FSDP has ``shard =
world``, DDP ``shard = 1``):

* **sharded state**: parameters ``P/shard``, gradients ``P/shard`` (the reduce-scatter's
  output, kept in ``.grad``) and the optimizer's state, ``k * P/shard`` with ``k`` its
  tensors per parameter (AdamW and Adam 2, SGD with momentum 1, SGD 0). Each parameter's
  dimension 0 is padded to a multiple of ``shard`` as FSDP2 pads it;
* **gathered parameters**: FSDP2 does not reshard the root after forward, so the root's
  unsharded parameters are held through the step. With ``reshard_after_forward=True`` a
  unit's are held while it computes, in forward and again in backward, beside the next
  unit's, prefetched (the largest two consecutive units count). With ``False`` every unit
  stays gathered from its forward to its backward: all of them at the backward's start;
* **gradient buffers**: in backward a unit's unsharded gradients (its size) and the
  reduce-scatter input, a copy of them (the largest unit counts twice). With
  ``gathered="step"`` every unit's unsharded gradients, reduce-scattered at the end of the
  backward unit by unit: a unit's gradient is held unsharded until its reduce-scatter and
  sharded after, never both (gradients set to None between steps, ``zero_grad``'s
  default), so they count ``P - P/shard`` beyond the sharded gradients, plus the largest
  unit's reduce-scatter input and output. HSDP all-reduces the sharded gradient over the
  replicas (a buffer of the largest unit's shard);
* **accumulated gradients** (``microbatches`` > 1, FSDP2 reduce-scattering every
  micro-batch's gradients, as ``chainplan.parallelize`` and torchtitan run them): from the
  second micro-batch on, the sharded gradients of the earlier ones are held beside the
  micro-batch's unsharded ones (``P/shard``; with ``gathered="per-unit"`` the sharded
  gradients count through the step already, so nothing more);
* **DDP**: the whole model's parameters, gradients and optimizer state, plus its buckets,
  which hold a copy of every gradient unless ``gradient_as_bucket_view=True``.

**Composed with chainplan's own checkpointing** (``Checkpointed`` or ``plan.wrap`` under a
user's ``fully_shard``, docs/distributed.md) the chain runs with every unit gathered for the
whole step (``gathered="step"``): a recomputation then reads parameters already resident,
so it costs no all-gather, and the gathered term is the whole model. That is the price of
composing under FSDP2 from outside its units; the sharded state is still divided. With
``gathered="stage"`` (:mod:`chainplan.executors.fsdpstage`; ``RankPlan.wrap`` then runs the
view that way) each unit is gathered around the stages that read it: the root, the unit
of the stage whose backward runs and the one a recomputation before it reads (the two
largest units count), one unit's unsharded gradients and its reduce-scatter input.

Everything here is an estimate from sizes, in bytes, with no allocator rounding; the
distributed tests (python/tests/distributed) check it against measured peaks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from chainplan._bind import parse_bytes
from chainplan.errors import InfeasibleBudget, PlanError

__all__ = ["RankMemory", "held_bytes", "optimizer_copies", "rank_memory", "unit_sizes"]

#: Tensors of state per parameter element, by optimizer (``torch.optim`` names, lowercased).
_OPTIMIZER_COPIES = {"adamw": 2, "adam": 2, "sgd-momentum": 1, "sgd": 0, "none": 0}

_STRATEGIES = ("fsdp", "hsdp", "ddp")
_GATHERED = ("per-unit", "step", "chain", "stage")


def optimizer_copies(optimizer: str) -> int:
    """Tensors of optimizer state per parameter (PlanError for an unknown name)."""
    key = optimizer.strip().lower()
    if key not in _OPTIMIZER_COPIES:
        raise PlanError(f"optimizer must be one of {', '.join(_OPTIMIZER_COPIES)} "
                        f"(got {optimizer!r})")
    return _OPTIMIZER_COPIES[key]


@dataclass(frozen=True)
class RankMemory:
    """One rank's memory besides activations (module docstring), in bytes.

    Attributes:
        world, shard, replicate: the data-parallel ranks, those a parameter is sharded over
            and the replicas (``world == shard * replicate``).
        strategy: ``"fsdp"``, ``"hsdp"`` or ``"ddp"``.
        reshard_after_forward: FSDP2's option for the non-root units.
        gathered_mode: ``"per-unit"`` (FSDP2 gathers a unit when it runs), ``"step"``
            (every unit gathered for the step: chainplan composed under ``fully_shard``
            on a model split from its graph), ``"stage"`` (each unit around the plan's
            stages that read it) or ``"chain"`` (the computing unit counted in
            the chain's stages, :mod:`chainplan.shardchain`).
        units: each wrapping unit's unsharded parameter bytes, by name; ``""`` is the root
            (parameters owned by no other unit).
        params_bytes, grads_bytes, optimizer_bytes: the rank's sharded state.
        gathered_bytes: the largest total of unsharded parameters held at once.
        buffer_bytes: the largest total of gradient and communication buffers at once.
        microbatches: the micro-batches whose gradients a step accumulates.
        accumulated_bytes: the sharded gradients of earlier micro-batches, held beside a
            later one's unsharded gradients (module docstring).
    """

    world: int
    shard: int
    replicate: int
    strategy: str
    reshard_after_forward: bool
    gathered_mode: str
    units: dict[str, int] = field(default_factory=dict)
    params_bytes: int = 0
    grads_bytes: int = 0
    optimizer_bytes: int = 0
    gathered_bytes: int = 0
    buffer_bytes: int = 0
    microbatches: int = 1
    accumulated_bytes: int = 0

    @property
    def fixed_bytes(self) -> int:
        """What the rank holds besides the plan's activations (the sum of the terms)."""
        return (self.params_bytes + self.grads_bytes + self.optimizer_bytes
                + self.gathered_bytes + self.buffer_bytes + self.accumulated_bytes)

    def activation_budget(self, device_bytes: int | str) -> int:
        """The activation budget of a rank whose device holds ``device_bytes``.

        Raises:
            InfeasibleBudget: the fixed part alone does not fit (the message gives both).
        """
        total = parse_bytes(device_bytes) if isinstance(device_bytes, str) else int(device_bytes)
        left = total - self.fixed_bytes
        if left <= 0:
            raise InfeasibleBudget(
                f"a {self.strategy} rank (world {self.world}, shard {self.shard}) holds "
                f"{self.fixed_bytes} bytes besides activations ({self.terms()}), more than "
                f"the device's {total}: shard over more ranks or use a larger device",
                min_budget_bytes=self.fixed_bytes)
        return left

    def terms(self) -> str:
        """The fixed part term by term, for messages."""
        acc = (f", gradients accumulated over {self.microbatches} micro-batches "
               f"{self.accumulated_bytes}" if self.accumulated_bytes else "")
        return (f"parameters {self.params_bytes}, gradients {self.grads_bytes}, optimizer "
                f"state {self.optimizer_bytes}, gathered parameters {self.gathered_bytes}, "
                f"buffers {self.buffer_bytes}{acc}")


def unit_sizes(model: nn.Module, units: list[str] | None = None) -> dict[str, int]:
    """Each wrapping unit's parameter bytes, by module path; ``""`` holds the rest (the root).

    ``units`` names the modules (``["blocks.0", "blocks.1"]``); by default, the modules
    ``fully_shard`` was applied to. A parameter shared by two modules (tied weights) is
    counted once, in the first unit owning it, as FSDP2 assigns it.
    """
    if units is None:
        from torch.distributed.fsdp import FSDPModule

        units = [n for n, m in model.named_modules() if n and isinstance(m, FSDPModule)]
    mods = dict(model.named_modules())
    missing = [u for u in units if u not in mods]
    if missing:
        raise PlanError(f"units {missing} are not modules of {type(model).__name__}")
    sizes: dict[str, int] = {}
    seen: set[int] = set()
    # Innermost units first, so a unit nested in another owns its own parameters.
    for name in sorted(units, key=lambda u: -u.count(".") - 1 if u else 0):
        total = 0
        for p in mods[name].parameters():
            if id(p) not in seen:
                seen.add(id(p))
                total += _unsharded_bytes(p)
        sizes[name] = total
    sizes[""] = sum(_unsharded_bytes(p) for p in model.parameters() if id(p) not in seen)
    return {u: sizes[u] for u in [*units, ""]}


def _unsharded_bytes(p: nn.Parameter) -> int:
    """A parameter's unsharded bytes (a DTensor's global shape)."""
    return math.prod(p.shape) * p.element_size()


def held_bytes(tensors: Iterable[Any]) -> int:
    """The bytes this rank holds of ``tensors``: a DTensor's local shard, a tensor whole;
    anything else (a None gradient) counts nothing. What a rank's measured peak adds to
    its activations: its parameters, gradients and optimizer state as sharded."""
    total = 0
    for t in tensors:
        if hasattr(t, "to_local"):  # a DTensor, without importing torch.distributed
            t = t.to_local()
        if isinstance(t, torch.Tensor):
            total += t.numel() * t.element_size()
    return total


def rank_memory(model_or_param_bytes: nn.Module | int, *, world: int, shard: int | None = None,
                reshard_after_forward: bool = True, optimizer: str = "adamw",
                units: list[str] | list[int] | None = None, strategy: str | None = None,
                gathered: str = "per-unit", bucket_view: bool = False,
                microbatches: int = 1) -> RankMemory:
    """One rank's memory besides activations (module docstring).

    Args:
        model_or_param_bytes: the model (its parameters' sizes are read; DTensors by their
            global shape), or its parameter bytes.

    Keyword Args:
        world: data-parallel ranks.
        shard: ranks a parameter is sharded over (default: ``world``; 1 for DDP). Between 1
            and ``world``, dividing it; below ``world`` it is HSDP.
        reshard_after_forward: FSDP2's option for the non-root units (default: True).
        optimizer: ``"adamw"`` (default), ``"adam"``, ``"sgd-momentum"``, ``"sgd"``,
            ``"none"``.
        units: with a model, the module paths of its wrapping units (default: those
            ``fully_shard`` was applied to); with bytes, each unit's bytes (the root's is
            what is left of the total).
        strategy: ``"fsdp"``, ``"hsdp"`` or ``"ddp"`` (default: from ``shard``).
        gathered: ``"per-unit"`` (default), ``"step"``, ``"stage"`` (module docstring) or
            ``"chain"``:
            each stage of the planned chain is a unit, whose gathered parameters,
            gradients and reduce-scatter input :func:`chainplan.shardchain.sharded_chain`
            adds to its stage; the fixed part then holds the root and one prefetched unit.
        bucket_view: DDP's ``gradient_as_bucket_view`` (default: False).
        microbatches: the micro-batches whose gradients one step accumulates (default 1):
            with more, FSDP and HSDP count the accumulated sharded gradients (module
            docstring). DDP accumulates in ``.grad``, counted already.

    Raises:
        PlanError: a world, shard, strategy, optimizer or unit that does not fit.
    """
    if isinstance(world, bool) or not isinstance(world, int) or world < 1:
        raise PlanError(f"world must be an integer ≥ 1 (got {world!r})")
    if strategy is not None and strategy not in _STRATEGIES:
        raise PlanError(f"strategy must be one of {', '.join(_STRATEGIES)} (got {strategy!r})")
    if shard is None:
        shard = 1 if strategy == "ddp" else world
    if isinstance(shard, bool) or not isinstance(shard, int) or not 1 <= shard <= world \
            or world % shard:
        raise PlanError(f"shard must divide world={world} (got {shard!r})")
    if strategy is None:
        strategy = "ddp" if shard == 1 and world > 1 else "hsdp" if shard < world else "fsdp"
    if (strategy == "ddp") != (shard == 1) and world > 1:
        raise PlanError(f"strategy {strategy!r} does not shard over {shard} of {world} ranks: "
                        "DDP has shard=1, FSDP shard=world, HSDP a divisor in between")
    if gathered not in _GATHERED:
        raise PlanError(f"gathered must be one of {', '.join(_GATHERED)} (got {gathered!r})")
    if isinstance(microbatches, bool) or not isinstance(microbatches, int) or microbatches < 1:
        raise PlanError(f"microbatches must be an integer ≥ 1 (got {microbatches!r})")
    copies = optimizer_copies(optimizer)
    sizes = _sizes(model_or_param_bytes, units)
    total = sum(sizes.values())
    replicate = world // shard
    if strategy == "ddp" or shard == 1:
        buckets = 0 if bucket_view else total
        return RankMemory(world, 1, replicate, "ddp", reshard_after_forward, gathered, sizes,
                          total, total, copies * total, 0, buckets, microbatches)
    share = sum(_padded(b, shard) for b in sizes.values()) // shard
    inner = [b for u, b in sizes.items() if u]
    root = sizes.get("", 0)
    if gathered == "step" or not reshard_after_forward:
        held = total
    elif gathered == "chain":  # the computing unit is its stage's (shardchain.py)
        held = root + max(inner, default=0)  # the one FSDP prefetches
    elif gathered == "stage":  # the backward's unit and a recomputed stage's
        held = root + sum(sorted(inner)[-2:])
    else:
        pairs = [a + b for a, b in zip(inner, inner[1:], strict=False)]
        pair = max(pairs, default=max(inner, default=0))
        held = root + pair
    largest = max(sizes.values(), default=0)
    if gathered == "step":
        # Reduce-scattered at the end of the backward, unit by unit (FSDP2's final
        # callback): a unit's gradient is held unsharded until then and sharded after,
        # never both (gradients set to None between steps), so the unsharded gradients
        # count beyond the share in grads_bytes; and the largest unit's reduce-scatter
        # input and output (measured: docs/distributed.md, "What a rank holds").
        buffers = max(0, total - share) + largest + _padded(largest, shard) // shard
    else:
        # The computing unit's unsharded gradients and its reduce-scatter input.
        buffers = 0 if gathered == "chain" else 2 * largest
    buffers += _padded(largest, shard) // shard if replicate > 1 else 0  # HSDP's all-reduce
    # Issue 34: measured under parallelize's FSDP2 with 2 micro-batches, the share of
    # gradients reduce-scattered by the first is held through the second's backward,
    # beside its unsharded gradients, which "step" and "stage" count as if never both.
    accumulated = share if microbatches > 1 and gathered != "per-unit" else 0
    return RankMemory(world, shard, replicate, strategy, reshard_after_forward, gathered,
                      sizes, share, share, copies * share, held, buffers, microbatches,
                      accumulated)


def _padded(nbytes: int, shard: int) -> int:
    """Bytes rounded up to a multiple of ``shard`` (an upper bound of FSDP2's padding)."""
    return -(-nbytes // shard) * shard


def _sizes(model_or_param_bytes: nn.Module | int,
           units: list[str] | list[int] | None) -> dict[str, int]:
    if isinstance(model_or_param_bytes, nn.Module):
        if units is not None and not all(isinstance(u, str) for u in units):
            raise PlanError("with a model, units are module paths (strings)")
        return unit_sizes(model_or_param_bytes, units)  # type: ignore[arg-type]
    total = model_or_param_bytes
    if isinstance(total, bool) or not isinstance(total, int) or total < 0:
        raise PlanError(f"parameter bytes must be an integer ≥ 0 (got {total!r})")
    given = [int(u) for u in units or []]
    if any(b < 0 for b in given) or sum(given) > total:
        raise PlanError(f"unit bytes {given} must be ≥ 0 and sum to at most {total}")
    out = {f"unit{i}": b for i, b in enumerate(given)}
    out[""] = total - sum(given)
    return out
