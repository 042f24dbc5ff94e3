"""A candidate's pipeline as a ``chainplan.pipeline/v1`` plan the existing runner executes.

A launch candidate gives only its cuts (``pp - 1`` layers): stage ``k`` on the pipeline
group's rank ``k``. The runner (:class:`~chainplan.pipeline.runner.PipelineRunner`) runs
plans, so the cuts become one: the 1F1B pattern of a contiguous chain with unit forwards
and backwards twice as long (stage ``k``'s forward at time ``k``, its backward after the
later stages' backwards; period 3, in which each rank's forward and backward take
complementary slots). The runner recognises it as ``Schedule1F1B``'s order. The document
claims no memory (``memory_per_gpu`` 0): a candidate's memory is the advisor's prediction,
not the plan's.

A stage with a checkpointing budget becomes one layer of the chain the runner sees: its
layers in a :class:`CheckpointedPart`, which ``chainplan.Checkpointed`` plans and runs
within the budget at its first forward.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from torch import nn

from chainplan.checkpointed import Checkpointed
from chainplan.errors import PlanError
from chainplan.launch.candidate import Budget
from chainplan.pipeline.document import FORMAT, PipelineDocument

__all__ = ["CheckpointedPart", "cuts_plan", "staged_chain"]

_F, _B = 1, 2  # the unit forward and backward of the pattern
_PERIOD = _F + _B


def cuts_plan(cuts: Sequence[int], layers: Sequence[int], microbatches: int) -> PipelineDocument:
    """The plan of ``len(cuts) + 1`` contiguous stages, stage ``k`` holding ``layers[k]``
    chain layers on rank ``k`` (module docstring)."""
    pp = len(layers)
    stages, first = [], 1
    for k, n in enumerate(layers):
        stages.append({"first": first, "last": first + n - 1, "gpu": k})
        first += n
    pattern: list[dict[str, Any]] = []

    def at(op: str, k: int, t: int, dur: int) -> None:
        pattern.append({"op": op, "stage": k, "start": t % _PERIOD, "duration": dur,
                        "shift": t // _PERIOD})

    for k in range(pp):
        at("F", k, k * _F, _F)
        back = pp * _F + _B * (pp - 1 - k)
        at("B", k, back, _B)
        if k < pp - 1:
            at("CF", k, (k + 1) * _F, 0)
            at("CB", k, back, 0)  # stage k+1's input gradient, as its backward ends
    doc = {"format": FORMAT, "algo": "cuts", "gpus": pp, "memory_bytes": 0, "bandwidth": 1,
           "weight_copies": 2, "activation_model": "saved", "period": _PERIOD,
           "stages": stages, "pattern": pattern, "memory_per_gpu": [0] * pp,
           "contiguous": True, "microbatches": microbatches}
    return PipelineDocument.from_dict(doc)


class CheckpointedPart(nn.Module):
    """One pipeline stage's layers, checkpointed by chainplan within ``budget``: one layer
    of the chain the runner sees (not an ``nn.Sequential``, which the runner would flatten
    back into its layers). ``group``: the stage's ranks that hold the same layers and agree
    on one plan (:mod:`chainplan.agreed`): its data-parallel group, and its tensor-parallel
    ranks with them. ``reuse``: ``Checkpointed``'s (off under tensor parallelism, whose
    ranks must all profile, their layers' collectives in step)."""

    def __init__(self, layers: Sequence[nn.Module], budget: int | str,
                 group: Any = None, *, reuse: bool = True) -> None:
        super().__init__()
        self.layers = nn.Sequential(*layers)
        self.budget = budget
        self.net = Checkpointed(self.layers, budget=budget, group=group, reuse=reuse)

    def forward(self, x: Any) -> Any:
        return self.net(x) if self.training else self.layers(x)


def staged_chain(chain: Sequence[nn.Module], cuts: Sequence[int],
                 budgets: Sequence[Budget], group: Any = None,
                 *, reuse: bool = True) -> tuple[nn.Sequential, list[int]]:
    """The chain the runner runs, and the chain layers of each stage: a stage with a
    budget is one :class:`CheckpointedPart` (planned in ``group``, the ranks holding this
    rank's stage: only this rank's stage runs here; ``reuse`` as there), a stage without
    keeps its layers.

    Raises:
        PlanError: a cut at or past the chain's last layer.
    """
    bounds = [0, *cuts, len(chain)]
    if cuts and cuts[-1] >= len(chain):
        raise PlanError(f"cuts: the last stage starts after layer {cuts[-1]}, but the model's "
                        f"chain has {len(chain)} layers (chainplan.stages(model) lists them)")
    out: list[nn.Module] = []
    counts: list[int] = []
    for k in range(len(bounds) - 1):
        mine = list(chain[bounds[k]:bounds[k + 1]])
        budget = budgets[k]
        if budget is None:
            out += mine
            counts.append(len(mine))
        else:
            out.append(CheckpointedPart(mine, budget, group, reuse=reuse))
            counts.append(1)
    return nn.Sequential(*out), counts
