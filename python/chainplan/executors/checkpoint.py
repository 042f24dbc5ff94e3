"""The checkpointing executor: one graph per step, recomputing only what the backward reads.

:class:`CheckpointedChain` runs a plan's sequence the way PyTorch's non-reentrant
``torch.utils.checkpoint`` runs a checkpointed region, generalized to the plan:

* the **forward phase** runs every stage once, in order, recording one autograd graph for
  the whole chain, as a plain forward does. A stage whose forward-phase operation is
  ``F_all`` keeps its saved tensors (no hook at all: a plan that recomputes nothing is the
  plain forward); an ``F_ck`` or ``F_none`` stage keeps none (:mod:`chainplan.runtime.saved`);
* the training script computes the loss on the returned output and calls ``backward()``:
  **autograd runs the backward**, on the graph of the forward phase. Right before the
  backward of stage k reaches it (a pre-hook on the node that made a_k, or the first
  unpack of one of its dropped tensors), the executor runs the plan's operations between
  ``B_{k+1}`` and ``B_k``: activations recomputed without a graph (consecutive stages as
  one region, :mod:`chainplan.executors.regions`), and recomputations that fill the graphs
  of the stages whose backward comes next, the last of which stops once it has what the
  backward reads;
* the executor holds each activation it computed from its forward to its last reader,
  then drops it (:class:`~chainplan.executors.program.Program`); what the graphs saved
  goes as autograd frees it.

So memory is what ``planner/simulate`` replays (docs/rotor.md, "The exact memory model"):
an input that no graph saved is gone after the stage's forward, an output its stage did not
save after the next stage's backward, and each gradient as soon as autograd is done with it.

Recomputations replay the forward's RNG and autocast state and leave BatchNorm statistics
alone (:mod:`chainplan.runtime.recompute`). Stages extracted from a model's graph may read
side values (a mask, a timestep embedding); ``forward(x, side)`` installs the step's
:class:`~chainplan.runtime.side.SideInputs` while its operations run, and their gradients
flow through the graph as in a plain step.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import nn

from chainplan.executors.checkpointstep import CheckpointStep, side_scope
from chainplan.executors.forms import with_forms
from chainplan.executors.program import Program
from chainplan.executors.regions import Run, regions
from chainplan.executors.stretch import Stretch, stretches
from chainplan.plandoc import PlanDocument
from chainplan.runtime import compiled
from chainplan.runtime.side import SideInputs
from chainplan.shapecheck import warn_if_shape_differs

__all__ = ["CheckpointedChain"]


class CheckpointedChain(nn.Module):
    """An ``nn.Module`` that runs a chain of stages with a planned schedule.

    In training (grad enabled) a forward runs the plan's forward phase and returns the
    chain output a_L; the training script computes the loss on it and calls
    ``backward()``, during which the plan's recomputations run (module docstring). Under
    ``torch.no_grad()`` it is the plain chain. The script should keep no other reference to
    the output past the loss (as in ``loss_fn(net(x), y)``), so that the loss may free it
    as the plan counts.

    Args:
        stages: the stages of the chain, in order (see ``chainplan.stages``).
        plan: a plan for exactly ``len(stages)`` stages.

    Raises:
        ScheduleError: the plan is malformed, is for another number of stages, or is not a
            checkpointing plan this executor runs (its forward phase must run each stage
            once, in order).
    """

    def __init__(self, stages: Sequence[nn.Module], plan: PlanDocument) -> None:
        super().__init__()
        plan.validate_for(len(stages))
        # A stage the plan runs in another form (a head unfused from its loss) is that form.
        stages, plan = with_forms(stages, plan)
        self.stages = nn.ModuleList(stages)
        self.plan = plan
        self.program = Program.of(plan)
        # made at the first training call, compiled (True) or eager (False)
        self._stretches: dict[bool, dict[int, Stretch]] = {}
        self._regions: dict[bool, dict[int, tuple[Run, Stretch]]] = {}

    @property
    def recomputed(self) -> frozenset[int]:
        """The stages the plan runs forward more than once (each keeps an RNG state)."""
        return self.program.recomputed

    @compiled.entry
    def forward(self, x: torch.Tensor, side: SideInputs | None = None) -> torch.Tensor:
        """Run the forward phase on the chain input ``x``; ``side`` holds the step's side
        values when the stages were extracted from a graph (:mod:`chainplan.graph`).

        Under ``torch.compile`` the executor's own code runs eagerly and the stages compile,
        each once (:mod:`chainplan.runtime.compiled`).
        """
        return self._run(x, side, compiled.current())

    @compiled.eager
    def _run(self, x: torch.Tensor, side: SideInputs | None, callback: Any) -> torch.Tensor:
        if not torch.is_grad_enabled():
            with side_scope(side):
                for stage in self.stages:
                    x = compiled.stage_call(callback, stage, x)
            return x
        warn_if_shape_differs(self.plan, x)
        if side is not None:
            side = side.attached()  # one graph per step: the side values' gradients flow
        # Runs of store-all stages as one region: compiled under torch.compile, one
        # straight-line graph in eager execution (chainplan.executors.stretch).
        compiling = callback is not None
        runs = self._stretches.get(compiling)
        if runs is None:
            runs = self._stretches[compiling] = stretches(self.program, list(self.stages),
                                                          inline=not compiling)
        # Recomputation runs as one region each, the same way (chainplan.executors.regions).
        recs = self._regions.get(compiling)
        if recs is None:
            recs = self._regions[compiling] = regions(self.program, list(self.stages),
                                                      inline=not compiling)
        step = CheckpointStep(list(self.stages), self.program, self.plan.sequence, x, side,
                              callback, self.plan.choices, runs, recs)
        with side_scope(side):
            return step.forward()
