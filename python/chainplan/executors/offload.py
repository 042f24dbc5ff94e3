"""The offloading executor: run a pofo schedule (compute sequence + ordered transfers).

A plan with an ``offload`` section (pofo spec §5.1; ``offload.go``) adds to the rotor
sequence a list of transfers on one GPU↔host link, in link order: ``offload`` copies a stored
activation to host memory and frees its device copy, ``prefetch`` brings it back before an
operation reads it again. :class:`OffloadedChain` runs the sequence exactly as
:class:`~chainplan.executors.CheckpointedChain` does (same runner, same RNG and BatchNorm
handling) and issues the transfers between operations, following pofo spec §5.6: one
copy stream (``torch.cuda.Stream``) runs the transfers in list order.

* What moves is a device *storage*. An offload copies its bytes to the host (on the CUDA
  copy stream, into pinned memory, then records an event; the storage is marked as used by
  the copy stream with ``record_stream``); at its release point the storage is resized to 0
  bytes, which frees the memory for every tensor sharing it: the runner's reference,
  autograd's saved references, the detached input of the next recorded forward. The caching
  allocator hands the memory out again only once the copy is done (O.7: an offload releases
  its memory when it completes). A prefetch resizes the storage back (allocated on the copy
  stream) and copies the bytes in, in place, then records an event; the compute stream waits
  on it before the prefetch's anchor op (or before any earlier read, or in the unpack hook).
  Resizing rather than dropping references is what frees an a_ℓ that the next ``F_all ℓ+1``
  saved for its backward (a convolution or BatchNorm saves its input): the model counts a_ℓ
  once, and so does the executor.
* On the CPU the same code runs with host copies: an offload clones the bytes into a
  separate CPU tensor and the release resizes the original storage to 0; a prefetch resizes
  it back and copies the bytes in. This is how the tests check correctness, and that the
  storages are really emptied.

What is moved:

* ``a_ℓ`` (0 < ℓ < L): the storage of the tensor the runner stores for ``F_ck``/``F_none`` ℓ.
  It is released after the last operation that reads it before the prefetch (normally at
  once, or after the next forward, which may read it while the copy runs).
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
  prefetched it, which the checks below rule out).
* A storage also shared with a tensor the plan treats as a different activation (a view
  made by a later stage, e.g. ``nn.Flatten``'s output) is not resized: freeing it would
  destroy the other tensor. Its copy is made but its memory stays.

Issue points (positions between operations, 0-based indices into ``plan.sequence``):

* an offload right after its anchor op (``after``; ``-1``: before the first op);
* a prefetch at its planned start: the op running at ``timing.transfer_start[j]`` according to
  ``timing.compute_start``, issued just before that op starts; without timing, together with
  the previous transfer on the link (and, in a plan synchronized at the loss, not before the
  backward phase). It is never issued later than its anchor op
  (``before``), and the compute stream waits for it before that op.
* transfers are issued in list order: a transfer is never issued before the previous one.
* the loss (``F_all L+1``, ``B L+1``) runs in the training script: a transfer placed there is
  issued at the start of the backward phase.

Malformed sections (bad tensor names, anchors, a prefetch of a tensor that is not offloaded,
an offloaded tensor read after the loss without a prefetch, a prefetch that link order
pushes past its anchor) raise :class:`~chainplan.errors.ScheduleError` naming the transfer.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.runner import Runner as _Runner
from chainplan.schedule import Op, Plan

__all__ = ["OffloadedChain"]

_TENSOR = re.compile(r"^a(bar)?(0|[1-9][0-9]*)$")


@dataclass(frozen=True)
class _Transfer:
    """One transfer of the plan, parsed."""

    index: int
    dir: str  # "offload" or "prefetch"
    stage: int
    saved: bool  # ā_ℓ (abar) rather than the plain a_ℓ
    anchor: int

    @property
    def name(self) -> str:
        return f"abar{self.stage}" if self.saved else f"a{self.stage}"

    def __str__(self) -> str:
        where = "before" if self.dir == "prefetch" else "after"
        return f"transfers[{self.index}] ({self.dir} {self.name} {where} {self.anchor})"


def _parse_transfers(off: Any, seq: Sequence[Op], num_stages: int) -> list[_Transfer]:
    if not isinstance(off, dict):
        raise ScheduleError("offload: the section must be an object")
    items = off.get("transfers")
    if not isinstance(items, list):
        raise ScheduleError("offload: 'transfers' must be a list")
    n = len(seq)
    out = []
    for j, item in enumerate(items):
        where = f"offload transfers[{j}]"
        if not isinstance(item, dict):
            raise ScheduleError(f"{where}: not an object ({item!r})")
        d, name = item.get("dir"), item.get("tensor")
        if d not in ("offload", "prefetch"):
            raise ScheduleError(f"{where}: unknown dir {d!r} (want offload or prefetch)")
        m = _TENSOR.match(name) if isinstance(name, str) else None
        if m is None:
            raise ScheduleError(f"{where}: tensor {name!r}: want a<stage> or abar<stage>")
        stage = int(m.group(2))
        if stage > num_stages:
            raise ScheduleError(f"{where}: tensor {name!r}: the chain has {num_stages} stages")
        key, other, lo = ("after", "before", -1) if d == "offload" else ("before", "after", 0)
        anchor = item.get(key)
        if other in item or not isinstance(anchor, int) or isinstance(anchor, bool):
            raise ScheduleError(f"{where}: {d} {name}: needs an integer {key!r} "
                                f"(and no {other!r})")
        if not lo <= anchor < n:
            raise ScheduleError(f"{where}: {d} {name}: {key} {anchor} out of range {lo}..{n - 1}")
        out.append(_Transfer(j, d, stage, bool(m.group(1)) and stage > 0, anchor))
    return out


def _parse_timing(off: dict[str, Any], n: int, m: int) -> tuple[list[float], list[float]] | None:
    tm = off.get("timing")
    if tm is None:
        return None
    ok = isinstance(tm, dict)
    cs, ts = (tm.get("compute_start"), tm.get("transfer_start")) if ok else (None, None)
    if not (isinstance(cs, list) and isinstance(ts, list) and len(cs) == n and len(ts) == m
            and all(isinstance(v, int | float) and not isinstance(v, bool) for v in cs + ts)):
        raise ScheduleError(f"offload timing: want compute_start ({n} numbers) and "
                            f"transfer_start ({m} numbers)")
    return [float(v) for v in cs], [float(v) for v in ts]


class _LinkPlan:
    """The static part of the transfer schedule: when to issue, release and wait.

    Positions are indices into the sequence: position ``p`` is "just before op p" (``n``:
    after the last op). ``issue_at[p]`` lists transfers issued there (link order),
    ``release_at[p]`` the stages whose offloaded plain a_ℓ loses its device reference,
    ``wait_at[p]`` the prefetches the compute stream waits for before op p, and
    ``hooked`` the ``F_all`` ops whose saved tensors go into holders.
    """

    def __init__(self, plan: Plan) -> None:
        seq = plan.sequence
        n = len(seq)
        num_stages = plan.num_stages
        cut = seq.index(Op("F_all", num_stages + 1))
        off = plan.raw["offload"]
        self.transfers = _parse_transfers(off, seq, num_stages)
        timing = _parse_timing(off, n, len(self.transfers))

        def norm(p: int) -> int:  # the loss runs outside: its positions map to the backward
            return cut + 2 if cut < p < cut + 2 else p

        issue: dict[int, int] = {}
        prev = 0
        for t in self.transfers:
            if t.dir == "offload":
                pos = t.anchor + 1
            elif timing is not None:
                cs, ts = timing
                k = bisect.bisect_right(cs, ts[t.index] + 1e-9 * max(1.0, abs(ts[t.index]))) - 1
                pos = min(max(k, 0), t.anchor)
            else:  # with the previous transfer, but after the loss in a synchronized plan
                pos = max(prev, cut + 2) if off.get("sync_at_loss") else prev
            pos = max(norm(pos), prev)
            if t.dir == "prefetch" and pos > norm(t.anchor):
                raise ScheduleError(f"offload {t}: link order issues it after op {t.anchor} "
                                    f"({seq[t.anchor]}), which needs it")
            issue[t.index] = prev = pos

        self.issue_at: dict[int, list[_Transfer]] = {}
        self.release_at: dict[int, list[_Transfer]] = {}
        self.wait_at: dict[int, list[_Transfer]] = {}
        self.hooked: set[int] = set()
        for t in self.transfers:
            self.issue_at.setdefault(issue[t.index], []).append(t)
            if t.dir == "prefetch":
                self.wait_at.setdefault(norm(t.anchor), []).append(t)

        # A logical walk (pofo spec §5.2): which tensor each transfer moves, and who reads it.
        plain: set[int] = {0}
        saved: dict[int, int] = {}  # stage -> index of the F_all op that recorded ā_ℓ
        offloaded: dict[str, _Transfer] = {}
        release: dict[int, int] = {}  # offload index -> release position
        for p in range(n + 1):
            for t in self.issue_at.get(p, []):
                if t.dir == "offload":
                    present = t.stage in saved if t.saved else t.stage in plain
                    if not present:
                        raise ScheduleError(
                            f"offload {t}: {t.name} is not in memory after op {t.anchor}")
                    if t.name in offloaded:
                        raise ScheduleError(f"offload {t}: {t.name} is already offloaded by "
                                            f"{offloaded[t.name]}")
                    offloaded[t.name] = t
                    release[t.index] = p
                    if t.saved:
                        self.hooked.add(saved[t.stage])
                elif offloaded.pop(t.name, None) is None:
                    raise ScheduleError(f"offload {t}: {t.name} is not offloaded at this point")
            if p == n:
                break
            op = seq[p]
            k = op.stage
            if op.kind != "B":
                name = f"a{k - 1}" if k - 1 in plain else f"abar{k - 1}"
                src = offloaded.get(name)
                if src is not None:
                    if p > cut + 1:
                        raise ScheduleError(f"offload {src}: op {p} ({op}) reads {name} "
                                            "after the loss with no prefetch before it")
                    release[src.index] = p + 1
                if op.kind == "F_none":
                    plain.discard(k - 1)
                    offloaded.pop(f"a{k - 1}", None)
                if op.kind == "F_all":
                    saved[k] = p
                    offloaded.pop(f"abar{k}", None)
                else:
                    plain.add(k)
                    offloaded.pop(f"a{k}", None)
            else:
                src = offloaded.pop(f"abar{k}", None)
                if src is not None and k <= num_stages:
                    raise ScheduleError(f"offload {src}: op {p} ({op}) needs abar{k} "
                                        "with no prefetch before it")
                saved.pop(k, None)
                plain.discard(k - 1)
                offloaded.pop(f"a{k - 1}", None)
        for t in self.transfers:
            if t.index in release:
                self.release_at.setdefault(norm(release[t.index]), []).append(t)


class _Link:
    """Copies between the device and the host: a CUDA copy stream, or CPU clones."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.stream = (torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
                       if device.type == "cuda" else None)

    def to_host(self, t: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Start copying ``t`` to the host; the caller may drop ``t`` at once."""
        if self.stream is None:
            return t.clone(), None
        host = torch.empty_like(t, device="cpu", pin_memory=True)
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            host.copy_(t, non_blocking=True)
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record(self.stream)
        t.record_stream(self.stream)  # its memory is reused only once the copy is done
        return host, event

    def to_device(self, host: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Start copying ``host`` back; :meth:`wait` before reading the result."""
        if self.stream is None:
            return host.clone(), None
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            dev = torch.empty_like(host, device=self.device)
            dev.copy_(host, non_blocking=True)
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record(self.stream)
        return dev, event

    def refill(self, storage: torch.UntypedStorage, nbytes: int, host: torch.Tensor) -> Any:
        """Start giving a storage resized to 0 its ``nbytes`` back, copied from ``host``."""
        if self.stream is None:
            storage.resize_(nbytes)
            torch.empty(0, dtype=torch.uint8).set_(storage).copy_(host)
            return None
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            storage.resize_(nbytes)  # allocated on the copy stream
            view = torch.empty(0, dtype=torch.uint8, device=self.device).set_(storage)
            view.copy_(host, non_blocking=True)
            event = torch.cuda.Event()  # type: ignore[no-untyped-call]
            event.record(self.stream)
        return event

    def wait(self, dev: torch.Tensor, event: Any) -> None:
        """Make the current stream wait for a prefetch of ``dev``."""
        if event is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(event)
            dev.record_stream(stream)


def _storage(t: torch.Tensor) -> int:
    return int(t.untyped_storage().data_ptr())


class _Block:
    """One device storage that a transfer moves.

    An offload copies its bytes to the host; the release resizes the storage to 0 bytes,
    which frees the memory for every tensor sharing it (autograd's saved references and
    the detached input of the next recorded forward included). A prefetch resizes it back
    and copies the bytes in, in place, so every one of those tensors sees the data again.
    """

    __slots__ = ("storage", "nbytes", "host", "event", "released")

    def __init__(self, t: torch.Tensor) -> None:
        self.storage = t.untyped_storage()
        self.nbytes = self.storage.nbytes()
        self.host: torch.Tensor | None = None
        self.event: Any = None
        self.released = False

    def _bytes(self) -> torch.Tensor:
        return torch.empty(0, dtype=torch.uint8, device=self.storage.device).set_(self.storage)

    def offload(self, link: _Link) -> None:
        self.host, _ = link.to_host(self._bytes())

    def release(self) -> None:
        if self.host is not None and not self.released:
            self.storage.resize_(0)
            self.released = True

    def prefetch(self, link: _Link) -> None:
        if self.released:
            assert self.host is not None
            self.event = link.refill(self.storage, self.nbytes, self.host)
            self.released = False
        self.host = None

    def wait(self, link: _Link) -> None:
        if self.released:  # never prefetched: the plan's checks exclude it, copy now
            self.prefetch(link)
        if self.event is not None:
            link.wait(self._bytes(), self.event)
            self.event = None


def _movable(t: torch.Tensor, device: torch.device) -> bool:
    s = t.untyped_storage()
    return t.device == device and s.nbytes() > 0 and s.resizable()


class _Holder:
    """One tensor saved by autograd in a hooked ``F_all``, and the block that moves it."""

    __slots__ = ("tensor", "block")

    def __init__(self, t: torch.Tensor) -> None:
        # Detached: a holder referencing an output would make a reference cycle through
        # its grad_fn. The detached tensor shares the storage, which is what moves.
        self.tensor = t.detach()
        self.block: _Block | None = None

    def get(self, link: _Link) -> torch.Tensor:
        if self.block is not None:
            self.block.wait(link)
        return self.tensor


class _Group:
    """The saved tensors of one hooked ``F_all ℓ`` (its ā_ℓ), grouped by storage."""

    def __init__(self) -> None:
        self.holders: list[_Holder] = []
        self.blocks: dict[int, _Block] = {}
        self.out: _Block | None = None  # the output a_ℓ, moved with ā_ℓ when ℓ < L

    def pack(self, t: torch.Tensor) -> _Holder:
        h = _Holder(t)
        self.holders.append(h)
        return h

    def finish(self, out: torch.Tensor, kept: set[int], move_out: bool,
               device: torch.device) -> None:
        """Assign blocks once the forward is done: every saved storage but the ``kept`` ones
        (input, parameters, buffers) and, unless ``move_out`` is false, the output's."""
        out_ptr = _storage(out)
        if move_out and _movable(out, device):
            self.out = self.blocks[out_ptr] = _Block(out)
        else:
            kept = kept | {out_ptr}
        for h in self.holders:
            ptr = _storage(h.tensor)
            if ptr in kept or not _movable(h.tensor, device):
                continue
            if ptr not in self.blocks:
                self.blocks[ptr] = _Block(h.tensor)
            h.block = self.blocks[ptr]


class _Record:
    """What one offload moved: blocks, or (for a0 and a_L, which the caller also holds) the
    runner's reference to the tensor."""

    def __init__(self, blocks: list[_Block], out: _Block | None = None,
                 host: torch.Tensor | None = None) -> None:
        self.blocks = blocks
        self.out = out  # the block of a_ℓ itself, released only if nothing else shares it
        self.external = host is not None
        self.host = host  # the copy of a0 or a_L


class _OffloadRunner(_Runner):
    """A :class:`_Runner` that issues the plan's transfers between operations."""

    def __init__(self, stages: Sequence[nn.Module], x: torch.Tensor,
                 recomputed: frozenset[int], link_plan: _LinkPlan) -> None:
        super().__init__(stages, x, recomputed)
        self.link_plan = link_plan
        self.link = _Link(x.device)
        self.last = len(stages)
        self.pos = 0
        self.records: dict[str, _Record] = {}  # offloaded tensors, until their prefetch lands
        self.pending: dict[int, tuple[torch.Tensor, Any]] = {}  # prefetched a0/a_L, not waited
        self.groups: dict[int, _Group] = {}  # stage -> saved tensors of its hooked F_all

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

    def _issue(self, t: _Transfer) -> None:
        if t.dir == "prefetch":
            rec = self.records.get(t.name)
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
                raise ScheduleError(f"offload {t}: no recorded forward of stage {t.stage}")
            rec = _Record([b for b in group.blocks.values()], group.out)
        elif t.stage not in self.acts:
            raise ScheduleError(f"offload {t}: a{t.stage} is not in memory")
        elif self._external(t.stage) or not _movable(self.acts[t.stage], self.device):
            rec = _Record([], host=self.link.to_host(self.acts[t.stage])[0])
        else:
            b = _Block(self.acts[t.stage])
            rec = _Record([b], b)
        for b in rec.blocks:
            b.offload(self.link)
        self.records[t.name] = rec

    def _shared(self, b: _Block, stage: int) -> bool:
        """Whether a tensor other than a_ℓ's own references (a_ℓ, and the detached input
        of F_all ℓ+1) shares the storage of ``b``: e.g. a view made by a later stage."""
        ptr = int(b.storage.data_ptr())
        for k, t in self.acts.items():
            if k != stage and _storage(t) == ptr:
                return True
        for k, (x, out) in self.saved.items():
            out_shared = isinstance(out, torch.Tensor) and _storage(out) == ptr
            if (k != stage and out_shared) or (k != stage + 1 and _storage(x) == ptr):
                return True
        return False

    def _release(self, t: _Transfer) -> None:
        rec = self.records.get(t.name)
        if rec is None:
            return
        if rec.external:
            self.acts.pop(t.stage, None)  # a0 or a_L: drop the runner's reference
        for b in rec.blocks:
            if b is not rec.out or not self._shared(b, t.stage):
                b.release()

    def _land(self, t: _Transfer) -> None:
        """Make a prefetched tensor readable on the compute stream (before op ``before``)."""
        rec = self.records.pop(t.name, None)
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
            group = _Group()
            link = self.link

            def unpack(h: Any) -> Any:
                return h.get(link) if isinstance(h, _Holder) else h

            with torch.autograd.graph.saved_tensors_hooks(group.pack, unpack):
                super().run(op)
            x, out = self.saved[k]
            assert isinstance(out, torch.Tensor)  # a fresh F_all's output, not yet handed over
            stage = self.stages[k - 1]
            kept = {_storage(x)}
            kept.update(_storage(t) for t in stage.parameters())
            kept.update(_storage(t) for t in stage.buffers())
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


class OffloadedChain(CheckpointedChain):
    """An ``nn.Module`` that runs a chain with a pofo schedule: recomputation and offloading.

    The compute sequence runs as in :class:`~chainplan.executors.CheckpointedChain`; the
    plan's ``offload`` transfers move activations to host memory and back (module docstring).

    Args:
        stages: the stages of the chain, in order (see ``chainplan.stages``).
        plan: a plan for exactly ``len(stages)`` stages, with an ``offload`` section.

    Raises:
        ScheduleError: the plan or its offload section is malformed (naming the transfer).
    """

    def __init__(self, stages: Sequence[nn.Module], plan: Plan) -> None:
        super().__init__(stages, plan)
        if plan.raw.get("offload") is None:
            raise ScheduleError("the plan has no 'offload' section")
        self.link_plan = _LinkPlan(plan)

    def _runner(self, x: torch.Tensor) -> _Runner:
        return _OffloadRunner(list(self.stages), x, self.recomputed, self.link_plan)
