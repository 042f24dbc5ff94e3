"""The offloading executor: run a pofo schedule (compute sequence + ordered transfers).

A plan with an ``offload`` section (pofo spec §5.1; :mod:`chainplan.offloading`) adds to the
rotor sequence a list of transfers on one GPU↔host link, in link order: ``offload`` copies a
stored activation to host memory and frees its device copy, ``prefetch`` brings it back
before an operation reads it again. :class:`OffloadedChain` runs the sequence exactly as
:class:`~chainplan.executors.stepwise.StepwiseChain` does (same runner, same RNG and BatchNorm
handling) and issues the transfers between operations, following pofo spec §5.6: one copy
stream (``torch.cuda.Stream``) runs the transfers in list order.

The work is split three ways: :mod:`chainplan.executors.linkplan` indexes, once per plan,
the positions between operations at which the Go planner says each transfer is issued,
releases its tensor and is waited for; :mod:`chainplan.executors.storage` moves storages
between device and host; this module's :class:`OffloadRunner` applies the first with the
second during a step.

What is moved:

* ``a_ℓ`` (0 < ℓ < L): the storage of the tensor the runner stores for ``F_ck``/``F_none`` ℓ.
* ``a0`` and ``a_L`` are also the caller's (the chain input, and the output the loss reads
  before the executor's backward runs): their storage is never resized. An offload only
  drops the runner's reference (which frees the memory when the caller holds none, e.g. a
  batch moved to the device inside the call), a prefetch brings a new copy.
* ``ā_ℓ``: the forward ``F_all ℓ`` whose ā_ℓ is offloaded runs under
  ``torch.autograd.graph.saved_tensors_hooks``; the pack hook wraps each tensor autograd saves
  in a holder. Offloading ``ā_ℓ`` moves the storages of every holder (each storage once) and
  of the output a_ℓ (ā_ℓ ⊇ a_ℓ, pofo spec §1.1), except what is never offloaded or belongs to
  another tensor: parameters and buffers (O.6), the stage input a_{ℓ-1} (its own tensor; ā_ℓ
  excludes it), tensors on another device or with empty or non-resizable storages, and the
  output a_L of the last stage (see above). The unpack hook returns the holder's tensor,
  first waiting for its prefetch (or copying it back synchronously if the plan never
  prefetched it, which the Go simulator's checks of every planned schedule rule out).
* A storage also shared with a tensor the plan treats as a different activation (a view
  made by a later stage, e.g. ``nn.Flatten``'s output) is not resized: freeing it would
  destroy the other tensor. Its copy is made but its memory stays.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors.linkplan import LinkPlan
from chainplan.executors.runner import Runner
from chainplan.executors.stepwise import StepwiseChain
from chainplan.executors.storage import Block, Group, Holder, Link, Record, movable, storage_key
from chainplan.offloading import Transfer
from chainplan.ops import Op
from chainplan.plandoc import PlanDocument

__all__ = ["OffloadRunner", "OffloadedChain"]


class OffloadRunner(Runner):
    """A :class:`~chainplan.executors.runner.Runner` that also issues a plan's transfers
    between operations, at the positions its :class:`LinkPlan` gives.

    Args:
        stages: the chain's stages, in order.
        x: the chain input a_0.
        recomputed: the stages the plan runs forward more than once.
        link_plan: the plan's transfer schedule.
    """

    def __init__(self, stages: Sequence[nn.Module], x: torch.Tensor,
                 recomputed: frozenset[int], link_plan: LinkPlan) -> None:
        super().__init__(stages, x, recomputed)
        self.link_plan = link_plan
        self.link = Link(x.device)
        self.last = len(stages)
        self.pos = 0
        self.records: dict[str, Record] = {}  # offloaded tensors, until their prefetch lands
        self.pending: dict[int, tuple[torch.Tensor, Any]] = {}  # prefetched a0/a_L, not waited
        self.groups: dict[int, Group] = {}  # stage -> saved tensors of its hooked F_all

    def run_ops(self, ops: Sequence[Op], first: int) -> None:
        for i, op in enumerate(ops):
            self._between(first + i)
            self.run(op)
        self._between(first + len(ops))

    def _between(self, p: int) -> None:
        self.pos = p
        lp = self.link_plan
        for t in lp.issue_at.get(p, []):
            self._issue(t)
        for t in lp.release_at.get(p, []):
            self._release(t)
        for t in lp.wait_at.get(p, []):
            self._land(t)

    def _external(self, stage: int) -> bool:
        """a0 and a_L are also held by the caller: their storage is never resized."""
        return stage in (0, self.last)

    def _issue(self, t: Transfer) -> None:
        if t.dir == "prefetch":
            rec = self.records.get(t.tensor)
            if rec is None:
                return  # died (its holder's forward was not hooked); nothing to fetch
            if rec.host is not None:
                self.pending[t.stage] = self.link.to_device(rec.host)
                rec.host = None
            for b in rec.blocks:
                b.prefetch(self.link)
            return
        if t.saved:
            group = self.groups.get(t.stage)
            if group is None:
                raise ScheduleError(
                    f"offload {t.label}: no recorded forward of stage {t.stage}")
            rec = Record([b for b in group.blocks.values()], group.out)
        elif t.stage not in self.acts:
            raise ScheduleError(f"offload {t.label}: a{t.stage} is not in memory")
        elif self._external(t.stage) or not movable(self.acts[t.stage], self.device):
            rec = Record([], host=self.link.to_host(self.acts[t.stage])[0])
        else:
            b = Block(self.acts[t.stage])
            rec = Record([b], b)
        for b in rec.blocks:
            b.offload(self.link)
        self.records[t.tensor] = rec

    def _shared(self, b: Block, stage: int) -> bool:
        """Whether a tensor other than a_ℓ's own references (a_ℓ, and the detached input
        of F_all ℓ+1) shares the storage of ``b``: e.g. a view made by a later stage."""
        ptr = int(b.storage.data_ptr())
        for k, t in self.acts.items():
            if k != stage and storage_key(t) == ptr:
                return True
        for k, (x, out) in self.saved.items():
            out_shared = isinstance(out, torch.Tensor) and storage_key(out) == ptr
            if (k != stage and out_shared) or (k != stage + 1 and storage_key(x) == ptr):
                return True
        return False

    def _release(self, t: Transfer) -> None:
        rec = self.records.get(t.tensor)
        if rec is None:
            return
        if rec.external:
            self.acts.pop(t.stage, None)  # a0 or a_L: drop the runner's reference
        for b in rec.blocks:
            if b is not rec.out or not self._shared(b, t.stage):
                b.release()

    def _land(self, t: Transfer) -> None:
        """Make a prefetched tensor readable on the compute stream (before op ``before``)."""
        rec = self.records.pop(t.tensor, None)
        if rec is not None:
            for b in rec.blocks:
                b.wait(self.link)
        if not t.saved:
            self._take(t.stage)

    def _take(self, stage: int) -> None:
        item = self.pending.pop(stage, None)
        if item is not None:
            dev, event = item
            self.link.wait(dev, event)
            self.acts[stage] = dev

    def _input(self, k: int, op: Op) -> torch.Tensor:
        self._take(k - 1)
        for name in (f"a{k - 1}", f"abar{k - 1}"):
            rec = self.records.get(name)
            if rec is not None and rec.out is not None:
                rec.out.wait(self.link)  # read during its offload, or fetched early
        return super()._input(k, op)

    def run(self, op: Op) -> None:
        k = op.stage
        if op.kind == "F_none":
            self._take(k - 1)
        if op.kind != "F_all" or self.pos not in self.link_plan.hooked:
            super().run(op)
        else:
            group = Group()
            link = self.link

            def unpack(h: Any) -> Any:
                return h.get(link) if isinstance(h, Holder) else h

            with torch.autograd.graph.saved_tensors_hooks(group.pack, unpack):
                super().run(op)
            x, out = self.saved[k]
            assert isinstance(out, torch.Tensor)  # a fresh F_all's output, not yet handed over
            stage = self.stages[k - 1]
            kept = {storage_key(x)}
            kept.update(storage_key(t) for t in stage.parameters())
            kept.update(storage_key(t) for t in stage.buffers())
            group.finish(out, kept, not self._external(k), self.device)
            self.groups[k] = group
        if op.kind == "F_none":
            self.records.pop(f"a{k - 1}", None)

    def backward(self, k: int, grad: torch.Tensor | None) -> None:
        super().backward(k, grad)
        self.groups.pop(k, None)
        self.records.pop(f"abar{k}", None)
        self.records.pop(f"a{k - 1}", None)
        self.pending.pop(k - 1, None)


class OffloadedChain(StepwiseChain):
    """An ``nn.Module`` that runs a chain with a pofo schedule: recomputation and offloading.

    The compute sequence runs as in :class:`~chainplan.executors.stepwise.StepwiseChain`; the
    plan's ``offload`` transfers move activations to host memory and back (module docstring).

    Args:
        stages: the stages of the chain, in order (see ``chainplan.stages``).
        plan: a plan for exactly ``len(stages)`` stages, with an ``offload`` section.

    Raises:
        ScheduleError: the plan has no offload section, or it is malformed (naming the
            transfer).
    """

    def __init__(self, stages: Sequence[nn.Module], plan: PlanDocument) -> None:
        super().__init__(stages, plan)
        self.link_plan = LinkPlan(plan)

    def _runner(self, x: torch.Tensor) -> Runner:
        return OffloadRunner(list(self.stages), x, self.recomputed, self.link_plan)
