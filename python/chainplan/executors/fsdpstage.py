"""Gathering FSDP2 units per stage: a plan's stages gather only the units they read.

:func:`chainplan.executors.fsdp.gathered_units` runs a planned view under ``fully_shard``
with every unit gathered for the whole step (``"step"``, the default). With
``set_gathering(net, "stage")`` (or a :class:`~chainplan.sharded.RankPlan` made with
``rank_memory(..., gathered="stage")``) a model cut from its graph runs with each unit
gathered only around the stages that read its parameters, driving FSDP2's own
param-group methods (``unshard``, ``wait_for_unshard``, ``reshard``, ``post_backward``),
never a collective of its own:

* **forward**: a forward pre-hook on stage k gathers the units k reads (a stage reads a
  unit when one of its parameters belongs to a module of that unit: the stage's
  :class:`~chainplan.graph.stage.Reader`\\ s name the owner); the stage's forward hook
  reshards those that stage k+1 does not read, unless the unit was sharded with
  ``reshard_after_forward=False``, and the last stage's stay gathered for its backward.
  The root's parameters (FSDP2 keeps them gathered through the step) and the units the
  prelude or the epilogue read stay gathered, as under ``"step"``;
* **backward**: a hook on stage k's output gathers its units again before autograd runs
  the stage's backward, hence before the recomputations the plan puts there (which run
  the stages they recompute through the same pre-hook: a recomputed stage gathers its
  units again, and reshards them after, unless the backward in progress reads them);
* **reduce-scatter**: an identity autograd node on stage k's input fires when the
  stage's backward is done; the units first read by stage k (their last stage in the
  backward) then run FSDP's ``post_backward``: reduce-scatter their gradients and
  reshard. A unit whose first stage's input needs no gradient is left to FSDP's root
  final callback, which runs ``post_backward`` for every unit that did not.

**Prefetch**: in the forward phase, when stage k starts, once its own units are gathered,
the all-gather of the units stage k+1 reads next is started without waiting (FSDP2's
``unshard(async_op=True)``), so it overlaps stage k's computation; stage k+1's pre-hook
waits for it. In the backward, the plan's sequence says which stage's backward comes next
(``B_j`` after ``B_k``, with the recomputations it needs between them): once ``B_k``'s own
recomputations are done, right before autograd computes it, the all-gather of the units
``B_j`` reads is started, so it overlaps ``B_k``; ``B_j``'s hook waits for it. Only where
what is gathered then (the stage's units, the next's, those kept gathered for the prelude
or epilogue) is two units at most: ``rank_memory(gathered="stage")`` counts the two largest
units gathered at once (the backward's and a recomputation's), which then also bounds the
prefetches (:mod:`chainplan.rankpeak` counts them where they happen). The collectives
follow the plan's sequence, so every rank must run
the same plan: :func:`chainplan.executors.fsdp.gathered_units` compares the plans of the
ranks at the first step (one ``all_gather_object`` over the ranks of ``fully_shard``'s
mesh, or the group a ``Checkpointed`` was given) and refuses different ones with
a :class:`~chainplan.errors.PlanError` on every rank (a ``Checkpointed`` view's ranks
agree on one plan before: :mod:`chainplan.agreed`). Plans with operation-level options
(rotor-ops) and offloading plans run with ``"step"`` gathering: their executors read
parameters outside a stage's call. The memory this costs is
:func:`chainplan.sharded.rank_memory`'s ``gathered="stage"``.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

__all__ = ["StageGathering"]


class _Done(torch.autograd.Function):
    """Identity on a stage's input; its backward says the stage's backward is done."""

    @staticmethod
    def forward(ctx: Any, driver: Any, k: int, x: torch.Tensor) -> torch.Tensor:
        ctx.driver, ctx.k = driver, k
        return x.view_as(x)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[None, None, torch.Tensor]:
        ctx.driver.backward_done(ctx.k)
        return None, None, grad


class StageGathering:
    """Hooks on a chain's stages that gather the FSDP units each stage reads (module
    docstring); active only for the steps :meth:`start` begins.

    Args:
        stages: the chain's stages (``GraphStage``\\ s, in order).
        groups: the non-root units' FSDP param groups, in module order.
        modules: for each group, the ids of the modules belonging to it.
        outside: indices of the groups the prelude or the epilogue read (kept gathered).
        sequence: the plan's operations (``Op`` objects), which say what the backward reads
            next; None: the backward prefetches nothing.
    """

    def __init__(self, stages: Sequence[nn.Module], groups: list[Any],
                 modules: list[set[int]], outside: set[int],
                 sequence: Sequence[Any] | None = None) -> None:
        self.groups = groups
        self.outside = frozenset(outside)
        owner = {m: g for g, ms in enumerate(modules) for m in ms}
        self.reads: list[frozenset[int]] = [frozenset()]  # reads[k]: stage k's, 1-based
        for stage in stages:
            got = set()
            for r in getattr(stage, "reads", ()):
                mod = r.owner() if r.kind == "state" and r.owner is not None else None
                if mod is not None and id(mod) in owner:
                    got.add(owner[id(mod)])
            self.reads.append(frozenset(got))
        self.reads.append(frozenset())  # after the last stage
        self.first: dict[int, int] = {}
        for k in range(len(self.reads) - 2, 0, -1):
            for g in self.reads[k]:
                self.first[g] = k
        self.last = len(stages)
        self.prefetched = 0  # units whose forward all-gather started a stage ahead
        self.prefetched_backward = 0  # units whose all-gather started a backward ahead
        self.next_backward, self.recomputed_before = _backward_order(sequence or (),
                                                                     len(stages))
        self.active = False
        self.pending = 0  # the stage whose backward autograd is about to run
        ref = weakref.ref(self)
        self.handles = []
        self.options: list[tuple[nn.Module, Any]] = []
        for k, stage in enumerate(stages, start=1):
            self.handles.append(stage.register_forward_pre_hook(_pre(ref, k)))
            self.handles.append(stage.register_forward_hook(_post(ref, k)))
            make = getattr(stage, "option_program", None)
            if make is not None:
                # An operation-level option's program is made by running the stage outside
                # its call (its pack map): gather its units first. The program itself runs
                # right before the stage's backward, when they are gathered.
                self.options.append((stage, make))
                stage.option_program = _gathering_first(ref, k, make)

    def start(self) -> None:
        """A training step begins: only the root and the outside units are gathered."""
        self.active = True
        self.pending = 0
        self._gather(self.outside)
        for g, group in enumerate(self.groups):
            if g not in self.outside and group.is_unsharded:
                group.reshard()

    def remove(self) -> None:
        """Take the hooks off the stages."""
        for h in self.handles:
            h.remove()
        self.handles.clear()
        for stage, _ in self.options:
            del stage.option_program
        self.options.clear()

    def _gather(self, which: frozenset[int] | set[int]) -> None:
        for g in sorted(which):  # the same order on every rank
            group = self.groups[g]
            if not group.is_unsharded:
                group.unshard()
                group.wait_for_unshard()

    def _release(self, which: frozenset[int], forward: bool) -> None:
        for g in sorted(which - self.outside):
            group = self.groups[g]
            if forward and not group._reshard_after_forward:
                continue  # fully_shard(..., reshard_after_forward=False): FSDP's choice
            if group.is_unsharded:
                group.reshard()

    def before_stage(self, k: int, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        if _in_backward():
            # A recomputation before the backward of stage `pending`: besides that stage's
            # units, hold only this stage's (consecutive stages often read the same unit:
            # it is not gathered again).
            self._release_all_but(self.reads[k] | self.reads[self.pending])
            self._gather(self.reads[k])
            return None
        self._gather(self.reads[k])
        self._prefetch(k)
        x = args[0] if args else None
        if not torch.is_grad_enabled() or not isinstance(x, torch.Tensor) or not x.requires_grad:
            return None
        return (_Done.apply(self, k, x), *args[1:])

    def _prefetch(self, k: int) -> None:
        """Start the all-gather of the units stage k+1 reads and stage k does not, without
        waiting, where the two stages' units are two at most (module docstring)."""
        ahead = self.reads[k + 1] - self.reads[k] - self.outside
        if not ahead or len(self.outside | self.reads[k] | self.reads[k + 1]) > 2:
            return  # the units outside the chain stay gathered all step: they count too
        for g in sorted(ahead):  # the same order on every rank
            group = self.groups[g]
            if not group.is_unsharded:
                group.unshard(async_op=True)
                self.prefetched += 1

    def _prefetch_backward(self, k: int, held: frozenset[int]) -> None:
        """Start the all-gather of the units the plan's next backward after ``B_k`` reads,
        without waiting, where they and ``held`` (gathered while ``B_k`` runs) are two
        units at most with the outside ones (module docstring)."""
        j = self.next_backward.get(k)
        if j is None:
            return
        ahead = self.reads[j] - held - self.outside
        if not ahead or len(self.outside | held | self.reads[j]) > 2:
            return
        for g in sorted(ahead):  # the same order on every rank
            group = self.groups[g]
            if not group.is_unsharded:
                group.unshard(async_op=True)
                self.prefetched_backward += 1

    def _release_all_but(self, keep: frozenset[int]) -> None:
        self._release(frozenset(range(len(self.groups))) - keep, forward=False)

    def after_stage(self, k: int, out: Any) -> None:
        if _in_backward():  # a recomputation: released when another unit is gathered
            if k == self.pending:  # the last one before B_k, which autograd runs next
                self._prefetch_backward(k, self.reads[k])
            return
        if k != self.last:
            self._release(self.reads[k] - self.reads[k + 1], forward=True)
        if torch.is_grad_enabled() and isinstance(out, torch.Tensor) and out.requires_grad:
            ref = weakref.ref(self)

            def before_backward(grad: torch.Tensor) -> None:
                driver = ref()
                if driver is not None and driver.active:
                    driver.pending = k
                    driver._release_all_but(driver.reads[k])  # what recomputations left
                    driver._gather(driver.reads[k])
                    if k not in driver.recomputed_before:
                        driver._prefetch_backward(k, driver.reads[k])

            out.register_hook(before_backward)  # type: ignore[no-untyped-call]

    def backward_done(self, k: int) -> None:
        """Stage k's backward is done: reduce-scatter the units it was the last to read
        (FSDP's ``post_backward``, which reshards them); reshard what stage k-1 does not
        read."""
        if not self.active:
            return
        for g in sorted(self.reads[k] - self.reads[k - 1] - self.outside):
            if self.first[g] == k:
                self.groups[g].post_backward()
            elif self.groups[g].is_unsharded:
                self.groups[g].reshard()


def _backward_order(sequence: Sequence[Any], stages: int) -> tuple[dict[int, int], set[int]]:
    """From a plan's operations: for each stage k of the chain whose backward ``B_k`` is
    followed by another stage's, that stage; and the stages whose backward the plan
    precedes with recomputations (forwards between the previous backward and it)."""
    following: dict[int, int] = {}
    recomputed: set[int] = set()
    previous: int | None = None
    forwards = False
    for op in sequence:
        if op.kind != "B":
            forwards = forwards or previous is not None
            continue
        if previous is not None and 1 <= previous <= stages and 1 <= op.stage <= stages:
            following[previous] = op.stage
        if forwards:
            recomputed.add(op.stage)
        previous, forwards = op.stage, False
    return following, recomputed


def _in_backward() -> bool:
    """Whether autograd's engine is running a backward on this thread (a recomputation)."""
    return bool(torch._C._current_graph_task_id() != -1)


def _gathering_first(ref: weakref.ReferenceType[StageGathering], k: int, make: Any) -> Any:
    def option_program(*args: Any, **kwargs: Any) -> Any:
        driver = ref()
        if driver is not None and driver.active:
            driver._gather(driver.reads[k])
        return make(*args, **kwargs)
    return option_program


def _pre(ref: weakref.ReferenceType[StageGathering], k: int) -> Any:
    def hook(_module: nn.Module, args: tuple[Any, ...]) -> tuple[Any, ...] | None:
        driver = ref()
        if driver is None or not driver.active:
            return None
        return driver.before_stage(k, args)
    return hook


def _post(ref: weakref.ReferenceType[StageGathering], k: int) -> Any:
    def hook(_module: nn.Module, _args: tuple[Any, ...], out: Any) -> None:
        driver = ref()
        if driver is not None and driver.active:
            driver.after_stage(k, out)
    return hook
