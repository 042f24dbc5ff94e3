"""The static part of an offloading plan's transfer schedule: when to issue, release, wait.

:class:`LinkPlan` turns a plan's typed :class:`~chainplan.offloading.Offload` section into
positions between the operations of the sequence (0-based indices: position ``p`` is "just
before op p", ``n`` after the last op), following pofo spec §5.6:

* an offload is issued right after its anchor op (``after``; ``-1``: before the first op);
* a prefetch at its planned start: the op running at ``timing.transfer_start[j]`` according
  to ``timing.compute_start``, issued just before that op starts; without timing, together
  with the previous transfer on the link (and, in a plan synchronized at the loss, not
  before the backward phase). It is never issued later than its anchor op (``before``), and
  the compute stream waits for it before that op;
* transfers are issued in list order: a transfer is never issued before the previous one;
* the loss (``F_all L+1``, ``B L+1``) runs in the training script: a transfer placed there
  is issued at the start of the backward phase.

An offloaded tensor's device memory is released after the last operation that reads it
before its prefetch: normally at once, or after the next forward, which may read it while
the copy runs. A logical replay of the sequence (pofo spec §5.2) finds these points and
refuses a section that does not fit the sequence, naming the transfer: an offload of a
tensor not stored at that point or already offloaded, a prefetch of a tensor that is not
offloaded, an offloaded tensor read after the loss (or needed by its backward) with no
prefetch before it, a prefetch that link order pushes past its anchor.
"""

from __future__ import annotations

import bisect

from chainplan.errors import ScheduleError
from chainplan.offloading import Offload, Transfer
from chainplan.schedule import Op, Plan

__all__ = ["LinkPlan"]


class LinkPlan:
    """When each transfer of a plan is issued, releases its tensor, and is waited for.

    Attributes:
        transfers: the plan's transfers, in link order.
        issue_at: position → the transfers issued there, in link order.
        release_at: position → the offloads whose tensor loses its device memory there.
        wait_at: position → the prefetches the compute stream waits for before that op.
        hooked: the positions of the ``F_all`` ops whose saved tensors go into holders
            (their ā_ℓ is offloaded).

    Args:
        plan: a plan with an ``offload`` section.

    Raises:
        ScheduleError: the plan has no offload section, or the section does not fit the
            sequence (the message names the transfer).
    """

    def __init__(self, plan: Plan) -> None:
        if plan.offload is None:
            raise ScheduleError("the plan has no 'offload' section")
        off: Offload = plan.offload
        seq = plan.sequence
        off.check(ops=len(seq), stages=plan.num_stages)
        self.transfers = off.transfers
        self._cut = seq.index(Op("F_all", plan.num_stages + 1))
        issue = self._issue_points(off, seq)
        self.issue_at: dict[int, list[Transfer]] = {}
        self.release_at: dict[int, list[Transfer]] = {}
        self.wait_at: dict[int, list[Transfer]] = {}
        self.hooked: set[int] = set()
        for t in self.transfers:
            self.issue_at.setdefault(issue[t.index], []).append(t)
            if t.dir == "prefetch":
                self.wait_at.setdefault(self._norm(t.anchor), []).append(t)
        release = self._replay(seq, plan.num_stages)
        for t in self.transfers:
            if t.index in release:
                self.release_at.setdefault(self._norm(release[t.index]), []).append(t)

    def _norm(self, p: int) -> int:
        """The loss runs outside the executor: its positions map to the backward's start."""
        cut = self._cut
        return cut + 2 if cut < p < cut + 2 else p

    def _issue_points(self, off: Offload, seq: tuple[Op, ...]) -> dict[int, int]:
        """Transfer index → issue position (module docstring)."""
        issue: dict[int, int] = {}
        prev = 0
        for t in off.transfers:
            if t.dir == "offload":
                pos = t.anchor + 1
            elif off.timing is not None:
                cs, start = off.timing.compute_start, off.timing.transfer_start[t.index]
                k = bisect.bisect_right(cs, start + 1e-9 * max(1.0, abs(start))) - 1
                pos = min(max(k, 0), t.anchor)
            else:  # with the previous transfer, but after the loss in a synchronized plan
                pos = max(prev, self._cut + 2) if off.sync_at_loss else prev
            pos = max(self._norm(pos), prev)
            if t.dir == "prefetch" and pos > self._norm(t.anchor):
                raise ScheduleError(f"offload {t.label}: link order issues it after op "
                                    f"{t.anchor} ({seq[t.anchor]}), which needs it")
            issue[t.index] = prev = pos
        return issue

    def _replay(self, seq: tuple[Op, ...], num_stages: int) -> dict[int, int]:
        """Walk the sequence with the transfers (pofo spec §5.2): check that each moves a
        tensor that is there, mark the hooked forwards, and return offload index → the
        position where its tensor's device memory is released."""
        cut = self._cut
        plain: set[int] = {0}
        saved: dict[int, int] = {}  # stage -> index of the F_all op that recorded ā_ℓ
        offloaded: dict[str, Transfer] = {}
        release: dict[int, int] = {}
        for p in range(len(seq) + 1):
            for t in self.issue_at.get(p, []):
                if t.dir == "prefetch":
                    if offloaded.pop(t.tensor, None) is None:
                        raise ScheduleError(
                            f"offload {t.label}: {t.tensor} is not offloaded at this point")
                    continue
                if not (t.stage in saved if t.saved else t.stage in plain):
                    raise ScheduleError(
                        f"offload {t.label}: {t.tensor} is not in memory after op {t.anchor}")
                if t.tensor in offloaded:
                    raise ScheduleError(f"offload {t.label}: {t.tensor} is already offloaded "
                                        f"by {offloaded[t.tensor].label}")
                offloaded[t.tensor] = t
                release[t.index] = p
                if t.saved:
                    self.hooked.add(saved[t.stage])
            if p == len(seq):
                break
            op = seq[p]
            k = op.stage
            if op.kind == "B":
                src = offloaded.pop(f"abar{k}", None)
                if src is not None and k <= num_stages:
                    raise ScheduleError(f"offload {src.label}: op {p} ({op}) needs abar{k} "
                                        "with no prefetch before it")
                saved.pop(k, None)
                plain.discard(k - 1)
                offloaded.pop(f"a{k - 1}", None)
                continue
            name = f"a{k - 1}" if k - 1 in plain else f"abar{k - 1}"
            src = offloaded.get(name)
            if src is not None:
                if p > cut + 1:
                    raise ScheduleError(f"offload {src.label}: op {p} ({op}) reads {name} "
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
        return release
