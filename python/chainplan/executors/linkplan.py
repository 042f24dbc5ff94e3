"""The static part of an offloading plan's transfer schedule: when to issue, release, wait.

:class:`LinkPlan` indexes the :class:`~chainplan.offloading.Position` of every transfer of a
plan's typed :class:`~chainplan.offloading.Offload` section by the position between the
operations where the executor acts on it (0-based: position ``p`` is "just before op p",
``n`` after the last op). The Go planner computes the positions (``planner/offsim``,
pofo spec §5.6; docs/formats-schedule.md, "Positions") from the transfers and the timing
it simulated, and its simulator checks them against both; nothing here re-derives them:

* a transfer is issued after op ``issue_after``;
* an offload's device memory is released after op ``release_after`` (at once, or after
  the next forward, which may read the tensor while the copy runs);
* the compute stream waits for a prefetch before op ``wait_before``.

The loss (``F_all L+1``, ``B L+1``) runs in the training script, so no position falls
between its two operations. A plan written before the planner emitted positions is refused
with a message saying to solve it again.
"""

from __future__ import annotations

from chainplan.errors import ScheduleError
from chainplan.offloading import Offload, Position, Transfer
from chainplan.ops import Op
from chainplan.plandoc import PlanDocument

__all__ = ["LinkPlan"]


class LinkPlan:
    """When each transfer of a plan is issued, releases its tensor, and is waited for.

    Attributes:
        transfers: the plan's transfers, in link order.
        issue_at: position → the transfers issued there, in link order.
        release_at: position → the offloads whose tensor loses its device memory there.
        wait_at: position → the prefetches the compute stream waits for before that op.
        hooked: the positions of the ``F_all`` ops whose saved tensors go into holders
            (their ā_ℓ is offloaded): for each offload of ā_ℓ, the last ``F_all ℓ`` before
            it is issued.

    Args:
        plan: a plan with an ``offload`` section.

    Raises:
        ScheduleError: the plan has no offload section, it has transfers but no
            ``positions`` (a plan written by an older planner), or the section does not fit
            the sequence (the message names the field).
    """

    def __init__(self, plan: PlanDocument) -> None:
        if plan.offload is None:
            raise ScheduleError("the plan has no 'offload' section")
        off: Offload = plan.offload
        seq = plan.sequence
        off.check(ops=len(seq), stages=plan.num_stages)
        self.transfers = off.transfers
        positions: tuple[Position, ...] = off.positions or ()
        if off.transfers and off.positions is None:
            raise ScheduleError(
                "offload.positions: missing (want where the executor issues, waits for and "
                "releases each transfer): the plan was written by a planner older than this "
                "executor; solve it again (chainplan.plan or chainplan solve)")
        self.issue_at: dict[int, list[Transfer]] = {}
        self.release_at: dict[int, list[Transfer]] = {}
        self.wait_at: dict[int, list[Transfer]] = {}
        self.hooked: set[int] = set()
        for t, p in zip(self.transfers, positions, strict=True):
            self.issue_at.setdefault(p.issue_after + 1, []).append(t)
            if p.wait_before is not None:
                self.wait_at.setdefault(p.wait_before, []).append(t)
            if p.release_after is not None:
                self.release_at.setdefault(p.release_after + 1, []).append(t)
            if t.dir == "offload" and t.saved:
                self.hooked.add(self._recorded(seq, t, p))

    @staticmethod
    def _recorded(seq: tuple[Op, ...], t: Transfer, p: Position) -> int:
        """The ``F_all ℓ`` whose saved tensors the offload of ā_ℓ moves: the last one
        before the transfer is issued."""
        want = Op("F_all", t.stage)
        k = next((i for i in range(p.issue_after, -1, -1) if seq[i] == want), None)
        if k is None:
            raise ScheduleError(f"offload {t.label}: no F_all {t.stage} runs before it is "
                                f"issued (after op {p.issue_after})")
        return k
