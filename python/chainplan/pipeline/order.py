"""Each rank's action list for one optimizer step, from a plan's periodic pattern.

A 1-periodic pattern (MadPipe spec §1.4, paper convention) runs micro-batch ``b`` through
operation ``o`` at ``start_o + (b + shift_o) * period``. One optimizer step of ``N``
micro-batches keeps the operations of micro-batches ``0..N-1`` only: the first periods hold
only the operations of the first micro-batches (the fill), the middle ones the whole pattern
(the steady state), the last ones what is left (the drain), and a synchronous flush follows.
Each rank runs its operations in the order of those times::

    period      0        1        2        3        4
    rank 0   F0(0)    F0(1)    F0(2) B0(0)  B0(1)  B0(2)        N = 3, stages 0 and 1,
    rank 1            F1(0) B1(0)  F1(1) B1(1) ...               B shifted one period later

The executor hands the lists to torch's runtime, which adds the sends and receives; only
the order matters there, not the times. Transfers (``CF``/``CB``) are the runtime's sends,
so they do not appear in the lists.

The order is a topological order of the step's dependencies (forward of stage k before
k+1, the last forward before the last backward, backward of k+1 before k, per
micro-batch), taking the earliest pattern time first among the ready operations: times
that tie or differ by a rounding error never put an operation before its input, and every
rank's list is the projection of one global order, so the runtime's send/receive lowering
cannot deadlock.

This module never imports torch.
"""

from __future__ import annotations

import heapq
from typing import Literal, NamedTuple

from chainplan.errors import ScheduleError
from chainplan.pipeline.document import PipelineDocument, PlanStage

__all__ = ["Action", "Kind", "builtin_schedule", "first_difference", "format_orders",
           "gpipe_orders",
           "one_f_one_b_orders", "rank_orders", "steady_microbatches", "steady_periods"]

#: ``F`` forward, ``B`` backward (weights and input together) of one stage.
Kind = Literal["F", "B"]
#: One list of actions per rank, ranks 0..P-1 (an idle rank has an empty list).
Orders = dict[int, tuple["Action", ...]]


class Action(NamedTuple):
    """One compute action: ``kind`` of ``stage`` (0-based) on micro-batch ``microbatch``."""

    stage: int
    kind: Kind
    microbatch: int

    def __str__(self) -> str:
        # torch.distributed.pipelining's notation: 2F0 is stage 2's forward of micro-batch 0.
        return f"{self.stage}{self.kind}{self.microbatch}"


def _check_microbatches(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ScheduleError(f"microbatches must be an integer ≥ 1 (got {n!r})")


def rank_orders(plan: PipelineDocument, microbatches: int) -> Orders:
    """Every rank's actions for one step of ``microbatches`` micro-batches.

    Complexity O(S·N·log(S·N)) for S stages and N micro-batches.

    Raises:
        ScheduleError: ``microbatches`` is not a positive integer.
    """
    _check_microbatches(microbatches)
    n, last = microbatches, len(plan.stages) - 1
    start: dict[tuple[Kind, int], tuple[float, int]] = {}
    for o in plan.pattern:
        if o.op in ("F", "B"):
            start[o.op, o.stage] = (o.start, o.shift)

    def key(kind: Kind, k: int, b: int) -> tuple[float, int, int, int]:
        t, shift = start[kind, k]
        # Ties go to the dependency order: earlier micro-batch, forwards first, forwards
        # up the chain and backwards down it.
        return (t + (b + shift) * plan.period, b, 0 if kind == "F" else 1,
                k if kind == "F" else -k)

    ready: list[tuple[tuple[float, int, int, int], Action]] = [
        (key("F", 0, b), Action(0, "F", b)) for b in range(n)]
    heapq.heapify(ready)
    out: dict[int, list[Action]] = {g: [] for g in range(plan.gpus)}
    while ready:
        _, a = heapq.heappop(ready)
        out[plan.stages[a.stage].gpu].append(a)
        # Each action has one successor, which depends on it alone.
        nxt: Action | None = None
        if a.kind == "F":
            nxt = Action(a.stage + 1, "F", a.microbatch) if a.stage < last \
                else Action(last, "B", a.microbatch)
        elif a.stage > 0:
            nxt = Action(a.stage - 1, "B", a.microbatch)
        if nxt is not None:
            heapq.heappush(ready, (key(nxt.kind, nxt.stage, nxt.microbatch), nxt))
    return {g: tuple(acts) for g, acts in out.items()}


def steady_periods(plan: PipelineDocument, microbatches: int) -> range:
    """The periods in which every compute operation of the pattern runs a real micro-batch.

    Period ``p`` runs micro-batch ``p - shift`` of each operation, so with shifts between
    ``h_min`` and ``h_max`` the steady periods are ``h_max .. N-1+h_min``: empty when ``N``
    is at most ``h_max - h_min`` (then the step is all fill and drain).
    """
    _check_microbatches(microbatches)
    shifts = [o.shift for o in plan.pattern if o.op in ("F", "B")]
    return range(max(shifts), microbatches + min(shifts))


def steady_microbatches(plan: PipelineDocument, microbatches: int, stage: int) -> range:
    """The micro-batches whose forward of ``stage`` runs in a steady period."""
    op = plan.op("F", stage)
    if op is None:
        raise ScheduleError(f"the pattern has no F of stage {stage}")
    periods = steady_periods(plan, microbatches)
    return range(periods.start - op.shift, periods.stop - op.shift)


def one_f_one_b_orders(num_stages: int, microbatches: int) -> Orders:
    """The order of torch's ``Schedule1F1B``: stage s on rank s runs ``min(N, S - s)``
    forwards, then one backward and one forward while forwards remain, then the rest of
    the backwards (PipeDream's 1F1B)."""
    out: Orders = {}
    for s in range(num_stages):
        warm = min(microbatches, num_stages - s)
        acts = [Action(s, "F", b) for b in range(warm)]
        for i in range(microbatches - warm):
            acts += [Action(s, "B", i), Action(s, "F", warm + i)]
        acts += [Action(s, "B", b) for b in range(microbatches - warm, microbatches)]
        out[s] = tuple(acts)
    return out


def gpipe_orders(num_stages: int, microbatches: int) -> Orders:
    """The order of torch's ``ScheduleGPipe``: every forward, then every backward."""
    return {s: tuple([Action(s, "F", b) for b in range(microbatches)]
                     + [Action(s, "B", b) for b in range(microbatches)])
            for s in range(num_stages)}


def first_difference(ours: Orders, theirs: Orders, name: str) -> str:
    """Where the plan's ``ours`` first departs from schedule ``name``'s ``theirs``, in words;
    "" when they are the same."""
    for rank in sorted(ours):
        a, b = ours[rank], theirs.get(rank, ())
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return f"rank {rank}, action {i}: the plan runs {x} where {name} runs {y}"
        if len(a) != len(b):
            return f"rank {rank}: the plan has {len(a)} actions, {name} {len(b)}"
    return ""


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _one_stage_per_rank(stages: tuple[PlanStage, ...], gpus: int) -> str:
    """Why the plan is not "stage s on rank s" (torch's single-stage schedules), or ""."""
    if len(stages) != gpus:
        return f"the plan has {_count(len(stages), 'stage')} on {_count(gpus, 'GPU')}"
    for s in stages:
        if s.gpu != s.index:
            return f"stage {s.index} is on GPU {s.gpu}"
    return ""


def builtin_schedule(plan: PipelineDocument, orders: Orders, microbatches: int) -> tuple[str, str]:
    """The torch single-stage schedule whose order is the plan's, and why.

    Returns:
        ``("Schedule1F1B", reason)`` or ``("ScheduleGPipe", reason)`` when every rank's
        order is that schedule's, else ``("", reason)`` saying why neither is (torch's
        interleaved schedule is compared by the runner, which needs torch).
    """
    why = _one_stage_per_rank(plan.stages, plan.gpus)
    if why:
        return "", f"{why}: torch's single-stage schedules put stage s alone on rank s"
    s = len(plan.stages)
    diffs = []
    if microbatches >= s:
        diff = first_difference(orders, one_f_one_b_orders(s, microbatches), "Schedule1F1B")
        if not diff:
            return "Schedule1F1B", "every rank's order is Schedule1F1B's"
        diffs.append(diff)
    else:
        diffs.append(f"Schedule1F1B needs micro-batches ≥ stages ({microbatches} < {s})")
    diff = first_difference(orders, gpipe_orders(s, microbatches), "ScheduleGPipe")
    if not diff:
        return "ScheduleGPipe", "every rank's order is ScheduleGPipe's"
    return "", "; ".join(diffs + [diff])


def format_orders(orders: Orders) -> str:
    """The lists one line per rank, in torch's notation (``rank 0: 0F0 0F1 3F0 ...``)."""
    return "\n".join(f"rank {r}: " + " ".join(str(a) for a in acts)
                     for r, acts in sorted(orders.items()))
