"""What a checkpointing plan asks of one training step, worked out once per plan.

:class:`Program` reads a plan's sequence (torch-free) into what the checkpointing executor
(:mod:`chainplan.executors.checkpoint`) does:

* the **forward phase** (the operations before the loss) runs every stage 1..L once, in
  order; its operation says what the stage's graph keeps: ``F_all`` everything (or, with
  an option, what the option keeps), ``F_ck`` and ``F_none`` nothing;
* each **backward group** is the operations between ``B_{k+1}`` and ``B_k``: they run
  right before ``B_k``, which autograd then runs on the graph of the forward phase. In a
  group, ``F_ck`` and ``F_none`` compute an activation without a graph, and ``F_all``
  **fills** its stage's graph (it regenerates the saved tensors its forward dropped); an
  ``F_all`` right before its own ``B`` stops as soon as it has them;
* **liveness**: the executor holds each activation it computed from that forward to its
  last reader (a forward of the next stage before the next copy is made, or the
  backward of the next stage when that stage's recomputation reads its input again), and
  drops it right after (``drops``).

This is the memory model of ``planner/simulate`` (docs/rotor.md, "The exact memory model").
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from chainplan.errors import ScheduleError
from chainplan.ops import Op
from chainplan.plandoc import PlanDocument

__all__ = ["Program"]


@dataclass(frozen=True)
class Program:
    """A plan's sequence, read for the checkpointing executor (module docstring).

    Attributes:
        stages: L, the number of stages.
        forward: the forward phase's operation of each stage, ``forward[k - 1]`` for stage
            k, with its index in the sequence.
        groups: for each stage k whose backward needs work first, the operations to run
            right before ``B_k`` (with their indices), in order; absent when none.
        backward_at: the index of ``B_k`` in the sequence, by stage.
        drops: for an operation index, the stages whose activation the executor drops
            right after it.
        early: the indices of the ``F_all`` that recompute right before their own
            backward (they stop once the saved tensors are back).
        recomputed: the stages run forward more than once.
        options: the option each stage's graph is filled with, when not 0.
    """

    stages: int
    forward: tuple[tuple[int, Op], ...]
    groups: dict[int, tuple[tuple[int, Op], ...]]
    backward_at: dict[int, int]
    drops: dict[int, tuple[int, ...]]
    early: frozenset[int]
    recomputed: frozenset[int]
    options: dict[int, int]

    @classmethod
    def of(cls, plan: PlanDocument) -> Program:
        """Read ``plan`` (already :meth:`~chainplan.schedule.Plan.validate`-d).

        Raises:
            ScheduleError: the forward phase does not run stages 1..L once each, in order
                (no planner of the checkpointing family makes such a plan).
        """
        seq = plan.sequence
        n = plan.num_stages
        cut = seq.index(Op("F_all", n + 1))
        fwd = [(i, op) for i, op in enumerate(seq[:cut])]
        in_order = [op.stage for _, op in fwd] == list(range(1, n + 1))
        if not in_order or any(op.kind == "B" for _, op in fwd):
            got = ", ".join(str(op) for _, op in fwd[:8])
            raise ScheduleError(
                f"the checkpointing executor runs plans whose forward phase runs stages 1..{n} "
                f"once each, in order; this one runs {got}{', ...' if len(fwd) > 8 else ''}")
        groups: dict[int, list[tuple[int, Op]]] = defaultdict(list)
        backward_at: dict[int, int] = {}
        pending: list[tuple[int, Op]] = []
        for i in range(cut + 2, len(seq)):
            op = seq[i]
            if op.kind == "B":
                backward_at[op.stage] = i
                if pending:
                    groups[op.stage] = pending
                pending = []
            else:
                pending.append((i, op))
        forwards = [op.stage for op in seq if op.kind != "B" and op.stage <= n]
        recomputed = frozenset(k for k in set(forwards) if forwards.count(k) > 1)
        early = frozenset(i for i, op in enumerate(seq[:-1])
                          if i >= cut and op.kind == "F_all" and seq[i + 1] == Op("B", op.stage))
        options: dict[int, int] = {}
        for op in seq:
            if op.kind == "F_all" and op.option:
                options[op.stage] = op.option
        # Partial options need stage k's graph filled with a recomputation right before
        # B_k: that stage's group exists even when it has no operation.
        for k in options:
            groups.setdefault(k, [])
        return cls(stages=n, forward=tuple(fwd), groups={k: tuple(v) for k, v in groups.items()},
                   backward_at=backward_at, drops=_drops(seq, n, options), early=early,
                   recomputed=recomputed, options=options)


def _drops(seq: tuple[Op, ...], n: int, options: dict[int, int]) -> dict[int, tuple[int, ...]]:
    """Right after which operation the executor drops each activation it computed: its last
    reader (module docstring). a_0 is the caller's and the chain output a_L is handed to
    the loss, so neither is held past the forward phase's end."""
    last: dict[int, int] = {}  # index of a producer -> index of its last reader
    current: dict[int, int] = {}  # stage -> index of the current copy's producer
    for i, op in enumerate(seq):
        k = op.stage
        if op.kind == "B":
            if k in options and k - 1 in current:
                last[current[k - 1]] = i  # the option's recomputation reads a_{k-1}
            continue
        if k - 1 in current:
            last[current[k - 1]] = i
        if k <= n:
            current[k] = i
            last.setdefault(i, i)
    out: dict[int, list[int]] = defaultdict(list)
    for producer, reader in last.items():
        stage = seq[producer].stage
        if stage < n:
            out[reader].append(stage)
    return {i: tuple(v) for i, v in out.items()}
