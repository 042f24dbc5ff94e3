"""The offloading part of a plan, typed: transfers on one GPU↔host link and their timing.

It mirrors the Go types of ``offload.go`` (pofo spec §5.1; the JSON is documented in
docs/formats-schedule.md): a plan of an offloading algorithm keeps its compute sequence and
adds an :class:`Offload` section, the link's bandwidth and its :class:`Transfer` list in
link order, with the no-wait :class:`Timing`, the simulated :class:`Estimate` of each
memory model, and the :class:`Position` at which the executor issues, waits for and
releases each transfer (computed by the Go planner, ``planner/offload``).
:meth:`Offload.from_dict` reads the section of a plan document once, into these frozen,
typed views, checking it once (``trusted=True`` skips the range checks for a document the Go
planner returned, whose simulator checked more); the executor
(:mod:`chainplan.executors.linkplan`) consumes the result.

This module never imports torch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from chainplan.errors import ScheduleError
from chainplan.jsonfields import Fields

__all__ = ["Direction", "Estimate", "MemoryModel", "Offload", "Position", "Timing", "Transfer"]

#: ``offload`` copies a tensor to the host and frees its device copy; ``prefetch`` brings
#: an offloaded tensor back before it is read again.
Direction = Literal["offload", "prefetch"]
#: How a transfer occupies device memory while it runs (pofo spec §1.5): ``fractional``
#: (released or reserved continuously, what the planners optimize) or ``integral``
#: (released when an offload ends, reserved when a prefetch starts: the real behaviour).
MemoryModel = Literal["fractional", "integral"]

_DIRECTIONS: tuple[str, ...] = ("offload", "prefetch")
_MODELS: tuple[str, ...] = ("fractional", "integral")
_TENSOR = re.compile(r"^a(bar)?([0-9]+)$")


@dataclass(frozen=True)
class Transfer:
    """One copy on the link.

    Attributes:
        index: its position in link order (the index in ``offload.transfers``).
        dir: ``offload`` or ``prefetch``.
        stage: ℓ, 0..L: the tensor is a_ℓ or ā_ℓ.
        saved: ā_ℓ (``abar<ℓ>``, everything ``F_all ℓ`` saved) rather than the plain a_ℓ
            (``a<ℓ>``); always false for the chain input a_0.
        nbytes: the tensor's size in bytes (``bytes`` in JSON).
        anchor: a 0-based index into the plan's sequence: an offload may start once that
            operation has ended (``after``; -1 for the chain input, at time 0), a prefetch
            must have completed before it starts (``before``).
    """

    index: int
    dir: Direction
    stage: int
    saved: bool
    nbytes: int
    anchor: int

    @property
    def tensor(self) -> str:
        """The tensor's name, as in JSON: ``a3``, ``abar3``, ``a0``."""
        return f"abar{self.stage}" if self.saved else f"a{self.stage}"

    @property
    def label(self) -> str:
        """The transfer and its place in the list, for messages."""
        return f"transfers[{self.index}] ({self})"

    def __str__(self) -> str:
        where = "before" if self.dir == "prefetch" else "after"
        return f"{self.dir} {self.tensor} {where} {self.anchor}"

    @classmethod
    def from_fields(cls, f: Fields, index: int) -> Transfer:
        """Read one entry of ``transfers`` (the anchor's range is :meth:`Offload.check`'s)."""
        d = cast(Direction, f.choice("dir", _DIRECTIONS))
        name = f.string("tensor")
        m = _TENSOR.match(name)
        if m is None:
            raise ScheduleError(f"{f.path('tensor')}: {name!r}: want a<stage> or abar<stage>")
        stage = int(m.group(2))
        key, other = ("after", "before") if d == "offload" else ("before", "after")
        if f.has(other) or not f.has(key):
            raise ScheduleError(f"{f.where}: {d} {name}: needs an integer {key!r} "
                                f"(and no {other!r})")
        return cls(index=index, dir=d, stage=stage, saved=m.group(1) is not None and stage > 0,
                   nbytes=f.integer("bytes", 0, low=0), anchor=f.integer(key))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the Go side writes."""
        key = "before" if self.dir == "prefetch" else "after"
        return {"dir": self.dir, "tensor": self.tensor, "bytes": self.nbytes, key: self.anchor}


@dataclass(frozen=True)
class Position:
    """Where the offloading executor handles one transfer, as 0-based operation indices of
    the plan's sequence (docs/formats-schedule.md, "Positions"). The loss's forward and
    backward run together in the training script: no position falls between them.

    Attributes:
        issue_after: the operation after which the transfer is issued on the link (-1:
            before the first operation).
        wait_before: for a prefetch, the operation before which the compute stream waits
            for the copy; None for an offload.
        release_after: for an offload, the operation after which the tensor's device memory
            is released (-1: before the first operation); None for a prefetch.
    """

    issue_after: int
    wait_before: int | None = None
    release_after: int | None = None

    @classmethod
    def from_fields(cls, f: Fields, t: Transfer) -> Position:
        """Read the entry of ``positions`` for transfer ``t`` (ranges are
        :meth:`Offload.check`'s)."""
        key, other = (("wait_before", "release_after") if t.dir == "prefetch"
                      else ("release_after", "wait_before"))
        if f.has(other) or not f.has(key):
            raise ScheduleError(f"{f.where}: {t.dir} {t.tensor}: needs an integer {key!r} "
                                f"(and no {other!r})")
        value = f.integer(key)
        return cls(issue_after=f.integer("issue_after"),
                   wait_before=value if t.dir == "prefetch" else None,
                   release_after=None if t.dir == "prefetch" else value)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the Go side writes."""
        out: dict[str, Any] = {"issue_after": self.issue_after}
        if self.wait_before is not None:
            out["wait_before"] = self.wait_before
        if self.release_after is not None:
            out["release_after"] = self.release_after
        return out


@dataclass(frozen=True)
class Timing:
    """Start times under the plan's memory model, in the chain's time unit (spec §5.4).

    Attributes:
        compute_start: one per operation of the sequence.
        transfer_start: one per transfer, in link order.
    """

    compute_start: tuple[float, ...]
    transfer_start: tuple[float, ...]


@dataclass(frozen=True)
class Estimate:
    """The simulated outcome of the plan under one memory model.

    Attributes:
        memory_model: the model simulated.
        valid: whether the plan respects its budget and rules under that model.
        makespan: the simulated time of one step.
        peak_bytes: the simulated peak memory.
    """

    memory_model: MemoryModel
    valid: bool
    makespan: float
    peak_bytes: int


@dataclass(frozen=True)
class Offload:
    """The offloading part of a plan: one copy link running :attr:`transfers` in order.

    Attributes:
        bandwidth_bytes_per_s: β, the link bandwidth in bytes per time unit of the chain
            (per second for profiled chains); positive.
        memory_model: the model of the plan's makespan, peak and :attr:`timing`.
        sync_at_loss: the schedule is timed under OR.3 (pofo spec §4.2): every offload ends
            before the loss's backward starts, every prefetch starts after its forward.
        offloaded_bytes: the total size of the offloaded tensors.
        transfers: the copies in link order, offloads first.
        timing: the no-wait timing (optional in input files).
        estimates: the simulated makespan and peak under each memory model.
        positions: one per transfer, where the executor issues, waits for and releases it;
            None in documents written before the planner emitted them.
    """

    bandwidth_bytes_per_s: float
    memory_model: MemoryModel = "fractional"
    sync_at_loss: bool = False
    offloaded_bytes: int = 0
    transfers: tuple[Transfer, ...] = ()
    timing: Timing | None = None
    estimates: tuple[Estimate, ...] = ()
    positions: tuple[Position, ...] | None = None
    # The (ops, stages) this section was checked against, so that the check the decoder
    # runs is not run again by Plan.validate (which every executor calls); a copy made by
    # dataclasses.replace is checked anew.
    _checked: tuple[int, int] | None = field(default=None, init=False, compare=False,
                                             repr=False)

    @classmethod
    def from_dict(cls, obj: object, *, ops: int, stages: int, where: str = "offload",
                  trusted: bool = False) -> Offload:
        """Read and check the ``offload`` section of a plan document, once.

        Reading checks each field's type (the error names the field); the ranges
        (:meth:`check`) are checked here, and :meth:`check` for the same sequence is then
        free. ``trusted`` is for a document the Go planner of this installation has just
        returned through ``chainplan._bind``: Go replayed its transfers and checked its
        positions with the simulator, a stricter check than :meth:`check`, so the ranges
        are not checked again.

        Args:
            obj: the decoded section.
            ops: the number of operations of the plan's sequence.
            stages: L, the number of stages without the loss.
            where: the section's path, for messages.
            trusted: the document comes from the Go planner, not from a file.

        Raises:
            ScheduleError: naming the field at fault (``offload.transfers[2].tensor: ...``).
        """
        f = Fields(obj, where)
        tm = f.object("timing")
        transfers = tuple(Transfer.from_fields(t, i)
                          for i, t in enumerate(f.objects("transfers")))
        positions = None
        if f.has("positions"):
            entries = f.objects("positions")
            if len(entries) != len(transfers):
                raise ScheduleError(f"{f.path('positions')}: {len(entries)} entries for "
                                    f"{len(transfers)} transfers (want one per transfer)")
            positions = tuple(Position.from_fields(p, t)
                              for p, t in zip(entries, transfers, strict=True))
        off = cls(
            bandwidth_bytes_per_s=f.number("bandwidth_bytes_per_s", positive=True),
            memory_model=cast(MemoryModel, f.choice("memory_model", _MODELS)),
            sync_at_loss=f.boolean("sync_at_loss", False),
            offloaded_bytes=f.integer("offloaded_bytes", 0, low=0),
            transfers=transfers,
            timing=None if tm is None else Timing(tm.numbers("compute_start"),
                                                  tm.numbers("transfer_start")),
            estimates=tuple(
                Estimate(memory_model=cast(MemoryModel, e.choice("memory_model", _MODELS)),
                         valid=e.boolean("valid", False), makespan=e.number("makespan", 0.0),
                         peak_bytes=e.integer("peak_bytes", 0))
                for e in f.objects("estimates")),
            positions=positions,
        )
        if trusted:
            object.__setattr__(off, "_checked", (ops, stages))
        else:
            off.check(ops=ops, stages=stages, where=where)
        return off

    def check(self, *, ops: int, stages: int, where: str = "offload") -> None:
        """Check that the section fits a sequence of ``ops`` operations over L = ``stages``.

        Positions must be one per transfer, in range, in link order, an offload issued
        after its anchor and released after it is issued, a prefetch waited for before its
        anchor's operation or later and after it is issued. Whether the transfers make
        sense for the sequence (a tensor offloaded while stored, prefetched before it is
        read) and the positions are those they give is the Go simulator's check
        (``chainplan simulate``), which every plan of the planner has passed.

        Raises:
            ScheduleError: naming the field at fault.
        """
        if self._checked == (ops, stages):
            return
        self._check_ranges(ops, stages, where)
        object.__setattr__(self, "_checked", (ops, stages))

    def _check_ranges(self, ops: int, stages: int, where: str) -> None:
        if not self.bandwidth_bytes_per_s > 0:
            raise ScheduleError(f"{where}.bandwidth_bytes_per_s: want a positive number "
                                f"(got {self.bandwidth_bytes_per_s!r})")
        for t in self.transfers:
            at = f"{where}.transfers[{t.index}]"
            if t.stage > stages:
                raise ScheduleError(f"{at}.tensor: {t.tensor!r}: the chain has {stages} stages")
            key, lo = ("before", 0) if t.dir == "prefetch" else ("after", -1)
            if not lo <= t.anchor < ops:
                raise ScheduleError(f"{at}.{key}: {t.anchor} out of range {lo}..{ops - 1} "
                                    f"({t})")
        if self.positions is not None:
            self._check_positions(ops, where)
        if self.timing is not None:
            cs, ts = self.timing.compute_start, self.timing.transfer_start
            if len(cs) != ops or len(ts) != len(self.transfers):
                raise ScheduleError(
                    f"{where}.timing: {len(cs)} compute and {len(ts)} transfer starts, want "
                    f"{ops} (one per operation) and {len(self.transfers)} (one per transfer)")
            for name, starts in (("compute_start", cs), ("transfer_start", ts)):
                bad = next((i for i, v in enumerate(starts) if not v >= 0), None)
                if bad is not None:
                    raise ScheduleError(f"{where}.timing.{name}[{bad}]: a start time must be "
                                        f"non-negative (got {starts[bad]!r})")

    def _check_positions(self, ops: int, where: str) -> None:
        assert self.positions is not None
        if len(self.positions) != len(self.transfers):
            raise ScheduleError(f"{where}.positions: {len(self.positions)} entries for "
                                f"{len(self.transfers)} transfers (want one per transfer)")
        prev = -1
        for t, p in zip(self.transfers, self.positions, strict=True):
            at = f"{where}.positions[{t.index}]"
            if not -1 <= p.issue_after < ops:
                raise ScheduleError(f"{at}.issue_after: {p.issue_after} out of range "
                                    f"-1..{ops - 1} ({t})")
            if p.issue_after < prev:
                raise ScheduleError(f"{at}.issue_after: {p.issue_after}, before the previous "
                                    f"transfer's {prev} (transfers are issued in link order)")
            prev = p.issue_after
            if (p.wait_before is None) == (t.dir == "prefetch") or \
                    (p.release_after is None) == (t.dir == "offload"):
                key = "wait_before" if t.dir == "prefetch" else "release_after"
                raise ScheduleError(f"{at}: {t}: needs {key!r} alone")
            if p.wait_before is not None and not (
                    t.anchor <= p.wait_before < ops and p.issue_after < p.wait_before):
                raise ScheduleError(f"{at}.wait_before: {p.wait_before}, want "
                                    f"{max(t.anchor, p.issue_after + 1)}..{ops - 1} ({t})")
            if p.release_after is not None and not (
                    t.anchor <= p.issue_after <= p.release_after < ops):
                raise ScheduleError(f"{at}.release_after: {p.release_after} with issue_after "
                                    f"{p.issue_after}, want anchor ≤ issue_after ≤ "
                                    f"release_after < {ops} ({t})")

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the Go side writes (``timing``, ``estimates`` and ``positions``
        only when set)."""
        out: dict[str, Any] = {
            "bandwidth_bytes_per_s": self.bandwidth_bytes_per_s,
            "memory_model": self.memory_model, "sync_at_loss": self.sync_at_loss,
            "offloaded_bytes": self.offloaded_bytes,
            "transfers": [t.to_dict() for t in self.transfers]}
        if self.timing is not None:
            out["timing"] = {"compute_start": list(self.timing.compute_start),
                             "transfer_start": list(self.timing.transfer_start)}
        if self.estimates:
            out["estimates"] = [{"memory_model": e.memory_model, "valid": e.valid,
                                 "makespan": e.makespan, "peak_bytes": e.peak_bytes}
                                for e in self.estimates]
        if self.positions is not None:
            out["positions"] = [p.to_dict() for p in self.positions]
        return out
