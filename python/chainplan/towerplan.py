"""The multichain section of a plan for towers joined at the loss (``multichain.go``).

A plan of the ``multichain`` algorithms schedules K towers (a CLIP-style dual encoder, a
Siamese or triplet network) joined by one loss: every operation names its branch (1..K), the
joint loss is ``F_all``/``B`` of branch 0, stage 0, and ``free_grad`` drops the gradient of a
tower's input once its backward is done (docs/multichain.md). This module reads the section
and checks a sequence's structure; it never imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from chainplan.errors import ScheduleError
from chainplan.jsonfields import Fields
from chainplan.ops import Op

__all__ = ["Decision", "Multichain"]


@dataclass(frozen=True)
class Decision:
    """A canonical decision of the multi-chain dynamic program: replicate the head of
    ``branch`` (1-based) and forward it ``steps`` stages."""

    branch: int
    steps: int


@dataclass(frozen=True)
class Multichain:
    """The multichain section of a plan.

    Attributes:
        branches: K, the number of towers.
        keep_input_grad: per branch, whether the gradient of its input stays after the step.
        unit_bytes: the slot of the dynamic program (bytes; 0 for a plan of the
            concatenated towers).
        reserve_bytes: the memory the dynamic program keeps aside for transients (bytes).
        decisions: the dynamic program's decisions, in order.
        order: the concatenation order of the towers (1-based) of a plan of the linearized
            chain; empty otherwise.
    """

    branches: int
    keep_input_grad: tuple[bool, ...]
    unit_bytes: int = 0
    reserve_bytes: int = 0
    decisions: tuple[Decision, ...] = ()
    order: tuple[int, ...] = ()

    @classmethod
    def from_fields(cls, f: Fields) -> Multichain:
        """Read the section (``f`` is the ``multichain`` object of a plan document)."""
        k = f.integer("branches", low=1)
        keep = []
        for i, v in enumerate(f.items("keep_input_grad")):
            if not isinstance(v, bool):
                raise ScheduleError(f"{f.path('keep_input_grad')}[{i}]: want true or false "
                                    f"(got {v!r})")
            keep.append(v)
        if len(keep) != k:
            raise ScheduleError(f"{f.path('keep_input_grad')}: {len(keep)} values for {k} "
                                "branches")
        order = []
        for i, v in enumerate(f.items("order")):
            if not isinstance(v, int) or isinstance(v, bool) or not 1 <= v <= k:
                raise ScheduleError(f"{f.path('order')}[{i}]: want a branch 1..{k} (got {v!r})")
            order.append(v)
        return cls(branches=k, keep_input_grad=tuple(keep),
                   unit_bytes=f.integer("unit_bytes", 0, low=0),
                   reserve_bytes=f.integer("reserve_bytes", 0, low=0),
                   decisions=tuple(Decision(d.integer("branch", low=1), d.integer("steps", low=1))
                                   for d in f.objects("decisions")),
                   order=tuple(order))

    def lengths(self, sequence: Sequence[Op]) -> tuple[int, ...]:
        """L_j, the stages of each branch, as the sequence's operations name them (a
        branch's backward runs every one of its stages)."""
        lengths = [0] * self.branches
        for op in sequence:
            if op.branch > 0 and op.kind == "B":
                lengths[op.branch - 1] = max(lengths[op.branch - 1], op.stage)
        return tuple(lengths)

    def validate(self, sequence: Sequence[Op]) -> None:
        """Check the structure every executable multichain sequence has: branches in range,
        the joint loss once as ``F_all`` then ``B`` with every forward before it and every
        backward after it, each branch's backwards once each in order L_j..1, and
        ``free_grad`` exactly for the branches whose input gradient is not kept, after
        their backward.

        Raises:
            ScheduleError: naming the first operation that breaks a rule.
        """
        lengths = self.lengths(sequence)
        loss = [i for i, op in enumerate(sequence) if op.branch == 0]
        if (len(loss) != 2 or sequence[loss[0]].kind != "F_all" or sequence[loss[1]].kind != "B"
                or loss[1] != loss[0] + 1):
            raise ScheduleError("the joint loss (branch 0) must appear once, as F_all then B")
        expected = list(lengths)
        freed = [False] * self.branches
        for i, op in enumerate(sequence):
            j = op.branch
            if not 0 <= j <= self.branches:
                raise ScheduleError(f"op {i} ({op}): branch {j} out of range 0..{self.branches}")
            if j == 0:
                continue
            if op.kind == "free_grad":
                if self.keep_input_grad[j - 1] or freed[j - 1] or expected[j - 1] != 0 \
                        or i < loss[1]:
                    raise ScheduleError(f"op {i} ({op}): free_grad of branch {j} must follow its "
                                        "backward, once, and only when its input gradient is "
                                        "not kept")
                freed[j - 1] = True
            elif op.kind == "B":
                if i < loss[1] or op.stage != expected[j - 1]:
                    raise ScheduleError(f"op {i} ({op}): backward out of order (expected B "
                                        f"{j}.{expected[j - 1]}, after the loss)")
                expected[j - 1] -= 1
        for j in range(self.branches):
            if not self.keep_input_grad[j] and not freed[j]:
                raise ScheduleError(f"branch {j + 1}: no free_grad, but its input gradient is "
                                    "not kept")
