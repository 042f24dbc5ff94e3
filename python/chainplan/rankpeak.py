"""A data-parallel rank's planned peak as a maximum over the step, not a sum of maxima.

:func:`chainplan.sharded.rank_memory`'s ``fixed_bytes`` adds every term at its largest to
the plan's activation peak. The terms are not all there at once: measured under FSDP2 with
units gathered per stage (``bench/fsdp/stagepeak.py``, docs/distributed.md), a rank peaks
early in the backward, when no unit has been reduce-scattered yet (no sharded gradient, no
reduce-scatter buffer), one unit is gathered besides the root and only the stages already
run backward have gradients; the fixed part counted all of those, 4-5 MiB of bench/fsdp's
25 MiB. :func:`step_peak` replays the plan (the Go simulator's trace: each operation's
bytes before and while it runs) and adds to each operation what the rank holds then:

* always: the sharded parameters and optimizer state, and the gathered parameters: with
  ``gathered="stage"`` and the stages' units known (:func:`stage_units`), the root and the
  units of the operation's stage (in the forward, with the next stage's, which it
  prefetches where the two read two units at most; a recomputation before the backward of
  stage ``m``: its own and ``m``'s; a backward: its own, with those of the plan's next
  backward, which it prefetches on the same condition), else ``gathered_bytes``; a
  gather's all-gather output beside them at the operation's start (the largest unit and
  its shard, on the bytes it finds);
* from the first backward on: the gradients of the parameters read by the stages whose
  backward has run or is running (each stage's ``param_bytes``; at most the root's, one
  unit's and the rank's share when units are reduce-scattered as they finish, all of ``P``
  when they are held to the end), the reduce-scatter input FSDP2 keeps in flight and the
  reduce-scatter's output (with the units known: the unit last reduced, and the ones the
  operation's end reduces), HSDP's all-reduce;
* after the last operation: the final callback's reduce-scatters (the largest unit's
  input and output beside every gradient) or the optimizer step (the sharded gradients
  and a temporary the size of the rank's share);
* at every operation, the collective buffers a process group releases late: on gloo the
  CPU allocator's events of a step end with up to two units' bytes and a shard of the
  root never seen freed, a varying number from step to step (seemingly freed on gloo's
  own threads, which the probe does not record: the process's memory does not grow by
  them), so a measured peak may count them: two of the largest unit and a shard of the
  largest.

The rank's planned peak is the largest of these, and at most ``fixed_bytes`` plus the
plan's peak (where the terms are small beside the activations, the late buffers counted at
every operation can make the sum of maxima the lower figure: it is kept). DDP, the
``"chain"`` mode (the units are in the chain's stages already) and offloading plans keep
the sum.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from chainplan import _bind
from chainplan.source import envelope

# A chainplan.sharded.RankMemory: read by its fields only, so that this module, which
# sharded.py imports, imports nothing of it back.
RankMemory = Any

__all__ = ["step_peak", "stage_units"]


def stage_units(profile: Any, units: dict[str, int]) -> list[frozenset[str]] | None:
    """For each stage of ``profile`` (a Profile of a model split from its graph), the
    wrapping units (``RankMemory.units`` names, the root ``""`` left out) whose modules it
    runs; None when the profile has no split (an ``nn.Sequential``)."""
    split = getattr(profile, "split", None)
    if split is None:
        return None
    inner = [u for u in units if u]
    out = []
    for st in split.stages:
        paths = [m.removesuffix(" (part)") for m in st.modules]
        out.append(frozenset(u for u in inner
                             if any(p == u or p.startswith(u + ".") for p in paths)))
    return out


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def step_peak(memory: RankMemory, plan: Any, source: Any = None,
              reads: Sequence[frozenset[str]] | None = None) -> int:
    """The rank's peak over a training step planned by ``plan`` (module docstring), bytes.

    Args:
        memory: the rank's :class:`~chainplan.sharded.RankMemory`.
        plan: the activation plan.
        source: the chain ``plan`` was made on (anything :func:`chainplan.plan` takes);
            default: the plan's own source.
        reads: for each stage, the units it reads (:func:`stage_units`); used with
            ``gathered="stage"``.
    """
    whole: int = memory.fixed_bytes + int(plan.peak_bytes)
    if memory.strategy == "ddp" or memory.gathered_mode == "chain" \
            or getattr(plan, "offload", None) is not None \
            or getattr(plan, "multichain", None) is not None:
        return whole
    src = envelope(source, "rank_memory") if source is not None else plan.source
    if src is None:
        src = {"chain": plan.chain_json} if plan.chain_json is not None else None
    if src is None:
        return whole
    steps = _bind.plan_trace(src, plan.raw)["steps"]
    chain = json.loads(_bind.chain(src))["stages"]
    # Where the terms are small beside the activations, the sum of maxima can be the
    # lower of the two (the late collective buffers are counted at every operation here).
    return min(whole, _Rank(memory, chain, reads).peak(steps))


class _Rank:
    """What a rank holds besides activations at each operation of a replay."""

    def __init__(self, memory: RankMemory, chain: list[dict[str, Any]],
                 reads: Sequence[frozenset[str]] | None) -> None:
        self.m = memory
        s = memory.shard
        sizes: dict[str, int] = memory.units
        self.root = sizes.get("", 0)
        inner = {u: b for u, b in sizes.items() if u}
        self.inner = inner
        self.u1 = max(inner.values(), default=0)
        largest = max(sizes.values(), default=0)
        total = sum(sizes.values())
        share = memory.params_bytes
        self.state = memory.params_bytes + memory.optimizer_bytes
        # With micro-batches after the first, the sharded gradients the earlier ones
        # reduce-scattered are held at every operation (the replay is one micro-batch's).
        acc = memory.grads_bytes if memory.strategy != "ddp" \
            and getattr(memory, "microbatches", 1) > 1 else 0
        self.state += acc
        self.end_reduce = memory.gathered_mode == "step"  # reduced at the final callback
        self.cap = total if self.end_reduce else min(total, self.root + self.u1 + share)
        self.hsdp = _ceil_div(largest, s) if memory.replicate > 1 else 0
        self.gather = self.u1 + _ceil_div(self.u1, s)
        # Collective buffers released late, on the process group's threads: measured on
        # gloo, up to two units' and a shard of the root held past their collectives, at
        # times that vary from step to step (bench/fsdp/stagepeak.py, docs/distributed.md).
        self.late = 2 * self.u1 + _ceil_div(largest, s)
        self.end = max(memory.gathered_bytes + self.cap + largest + _ceil_div(largest, s)
                       + self.hsdp, 2 * share - acc)
        pb = [st.get("param_bytes") for st in chain]
        self.pb = None if any(b is None for b in pb) else [int(b or 0) for b in pb]
        stage_mode = memory.gathered_mode == "stage" and memory.reshard_after_forward
        self.reads = list(reads) if reads is not None and stage_mode else None
        if self.reads is not None:
            self.first: dict[str, int] = {}
            self.last: dict[str, int] = {}
            for k, us in enumerate(self.reads, start=1):
                for u in us:
                    self.first.setdefault(u, k)
                    self.last[u] = k

    def _read(self, k: int) -> frozenset[str]:
        assert self.reads is not None
        return self.reads[k - 1] if 1 <= k <= len(self.reads) else frozenset()

    def _grads_from(self, c: int) -> int:
        """Gradient bytes of the parameters read by stages ``c..``: an upper bound of the
        gradients there are while the backward of stage ``c`` runs or is next."""
        if self.pb is None:
            return self.cap
        return min(self.cap, sum(self.pb[c - 1:]))

    def held(self, kind: str, k: int, c: int | None, after: int | None = None) -> int:
        """Besides activations and the sharded state, at operation ``kind`` of stage ``k``;
        ``c``: the stage whose backward runs or is next (None in the forward); ``after``:
        at a backward, the stage whose backward the plan runs next."""
        if self.reads is None:
            held: int = self.m.gathered_bytes
            if c is None:
                return held
            rs = 0 if self.end_reduce else self.gather
            return held + self._grads_from(c) + rs + self.hsdp
        units = self._read(k) | (self._read(c) if c is not None and kind != "B" else frozenset())
        if c is None and len(units | self._read(k + 1)) <= 2:
            # The forward prefetches the next stage's units (executors/fsdpstage.py): they
            # are gathered while stage k computes.
            units |= self._read(k + 1)
        if kind == "B" and after is not None and len(units | self._read(after)) <= 2:
            # The backward prefetches the units of the next backward (fsdpstage.py).
            units |= self._read(after)
        held = self.root + sum(self.inner[u] for u in units)
        if c is None:
            return held
        s = self.m.shard
        root_grads = min(self.root, self._grads_from(c))
        ends = kind == "B"  # the operation's end reduce-scatters the units it read first
        unsharded = sharded = old = new = 0
        latest = min((f for f in self.first.values() if f > c), default=None)
        for u, b in self.inner.items():
            f, last = self.first.get(u), self.last.get(u)
            if f is None or last is None or last < c or (last == c and not ends):
                continue  # no gradient yet
            if f > c:
                sharded += _ceil_div(b, s)
                if f == latest:
                    old += b  # FSDP2 keeps the last reduce-scatter's input until the next
            else:
                unsharded += b
                if f == c and ends:
                    new += b + _ceil_div(b, s)  # its reduce-scatter's input and output
        # FSDP2 frees the input it kept before the next reduce-scatter allocates its own.
        return held + root_grads + unsharded + sharded + max(old, new) + self.hsdp

    def peak(self, steps: list[dict[str, Any]]) -> int:
        nxt: list[int | None] = [None] * len(steps)  # the backward at or after step i
        later: list[int | None] = [None] * len(steps)  # the backward after step i
        b: int | None = None
        for i in range(len(steps) - 1, -1, -1):
            later[i] = b
            op = steps[i]["op"]
            if op["op"] == "B":
                b = int(op["stage"])
            nxt[i] = b
        best, backward = 0, False
        for i, st in enumerate(steps):
            kind, k = st["op"]["op"], int(st["op"]["stage"])
            backward = backward or kind == "B"
            c = (k if kind == "B" else nxt[i]) if backward else None
            if c is None and backward:
                c = 1
            held = self.held(kind, k, c, later[i] if kind == "B" else None) + self.late
            best = max(best, held + max(int(st["during"]), int(st["before"]) + self.gather))
        after = int(steps[-1]["after"]) if steps else 0
        return int(self.state + max(best, self.end + after))
