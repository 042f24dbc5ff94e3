"""A plan's recomputations of consecutive stages run as one region each.

Before ``B_k`` the checkpointing executor recomputes activations without a graph: typically
``F_ck j, F_none j+1, ..., F_none k-1`` from the last checkpoint ``a_{j-1}``, then fills
stage k's graph. Run stage by stage, such a **recomputation run** of m stages is m calls
with the executor's Python between them: under ``torch.compile`` m compiled regions, each
with its guards, runtime wrappers and a boundary the compiler cannot fuse across (issue
36: small compiled plans ran slower than eager on a GPU). A run is one
:class:`~chainplan.executors.stretch.Stretch` instead, one call: compiled once (one graph
module per distinct run, its own code object, so Dynamo compiles each once, under no-grad)
and re-used by every step and every backward group that runs the same stages; in eager
execution a straight-line graph, as the forward phase's store-all stretches are.

A run is a maximal sequence of consecutive ``F_ck``/``F_none`` operations of one backward
group on consecutive stages, of two stages or more, such that:

* its input is held past the run (a checkpoint, or the chain input). The region's caller
  holds its input until the region returns, where stage by stage the executor drops it
  after the first stage: a run whose input goes after its first stage starts one stage
  later, so that the region never holds more than the plan counts;
* it returns the activations the plan holds past it (its last one, and any checkpoint it
  makes on the way, where the plan recomputes from it later), nothing else: the ones it
  drops die inside the region, as they did between the stage calls.

What stays stage by stage, and why:

* **the forward phase's checkpointed stages** (``F_ck``/``F_none`` before the loss): each
  records its stage's graph, whose backward must run on its own, with its saved tensors
  brought back right before it; one region would be one autograd node whose backward reads
  the saved tensors of all its stages at once, more memory than the plan counts. (The
  forward phase's store-all stages already run as stretches, :mod:`.stretch`.)
* **fills** (``F_all`` in a backward group): the stage's recomputation must run the same
  compiled code as its first forward, so that it saves the same tensors in the same order
  (:mod:`chainplan.runtime.saved`); a region would partition differently.
* **a run with a stage that drew random numbers** (dropout), found per step
  (:meth:`~chainplan.executors.checkpoint.CheckpointedChain`'s step): each stage replays
  its own forward's RNG state, and a region compiled across stages draws its numbers
  differently from the stages compiled one by one, so the masks would differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from torch import nn

from chainplan.executors.program import Program
from chainplan.executors.stretch import Stretch
from chainplan.ops import Op

__all__ = ["Run", "recomputation_runs", "regions"]


@dataclass(frozen=True)
class Run:
    """Operations ``start..end`` of the plan's sequence, forwards of stages ``first..last``
    without a graph, run as one region returning the activations of ``keep``."""

    start: int
    end: int
    first: int
    last: int
    keep: tuple[int, ...]


def recomputation_runs(program: Program) -> list[Run]:
    """The recomputation runs of ``program``'s backward groups (module docstring)."""
    drops: dict[int, list[int]] = {}  # stage -> the indices where a copy of it is dropped
    for i in sorted(program.drops):
        for k in program.drops[i]:
            drops.setdefault(k, []).append(i)

    def dropped_after(k: int, i: int) -> int | None:
        """Where the copy of a_k made at (or live at) operation i is dropped."""
        return next((d for d in drops.get(k, ()) if d >= i), None)

    out: list[Run] = []
    for group in program.groups.values():
        for ops in _consecutive(group, program.stages):
            while len(ops) >= 2:
                start, first = ops[0]
                held = dropped_after(first - 1, start)
                if held is not None and held <= ops[-1][0]:
                    ops = ops[1:]  # the input goes after the first stage (module docstring)
                    continue
                end, last = ops[-1]
                keep = tuple(k for i, k in ops[:-1]
                             if (d := dropped_after(k, i)) is None or d > end) + (last,)
                out.append(Run(start, end, first, last, keep))
                break
    return sorted(out, key=lambda r: r.start)


def _consecutive(group: Sequence[tuple[int, Op]], stages: int) -> list[list[tuple[int, int]]]:
    """The maximal sequences of consecutive ``F_ck``/``F_none`` operations of one backward
    group on consecutive stages, as (index, stage) pairs."""
    out: list[list[tuple[int, int]]] = []
    run: list[tuple[int, int]] = []
    for i, op in group:
        if op.kind not in ("F_ck", "F_none") or op.option or op.stage > stages:
            out.append(run)
            run = []
            continue
        if run and (op.stage != run[-1][1] + 1 or i != run[-1][0] + 1):
            out.append(run)
            run = []
        run.append((i, op.stage))
    out.append(run)
    return [r for r in out if r]


def regions(program: Program, stages: Sequence[nn.Module],
            inline: bool = False) -> dict[int, tuple[Run, Stretch]]:
    """Each recomputation run of ``program`` with its region, by the run's first operation
    index; runs of the same stages keeping the same activations share one region.

    Args:
        program: the plan's program.
        stages: the chain's stages, in order.
        inline: straight-line graphs where the stages allow it (eager execution).
    """
    made: dict[tuple[int, int, tuple[int, ...]], Stretch] = {}
    out: dict[int, tuple[Run, Stretch]] = {}
    for run in recomputation_runs(program):
        key = (run.first, run.last, run.keep)
        region = made.get(key)
        if region is None:
            region = made[key] = Stretch(list(stages[run.first - 1:run.last]), run.first,
                                         inline, run.keep)
        out[run.start] = (run, region)
    return out
