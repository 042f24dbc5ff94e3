"""The chain of each tower, and the model's forward with its towers' results given.

A tower is cut into stages as any chain is: an ``nn.Sequential`` called with its input alone
is the chain of its declared stages, any other tower is captured and split from its graph
(:func:`chainplan.graph.chain.extract`), the profile and the executor sharing the capture.
The *join* (everything the forward does outside the towers, the joint loss of the
multi-chain model) is the model's own forward run while each tower call returns a tensor it
is given (:func:`given_towers`): no copy of the forward's code is made.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.graph.chain import ExtractedChain, extract
from chainplan.graph.split import declared, stage_names
from chainplan.runtime.side import SideInputs
from chainplan.sequential import flatten_stages
from chainplan.towers.detect import BranchCall, TowerSplit

__all__ = ["TowerChain", "given_towers", "tower_chain"]


@dataclass(frozen=True)
class TowerChain:
    """The stages of one tower.

    Attributes:
        stages: in order.
        names: their names, prefixed with the tower's path (``image.layer1:Sequential``).
        extracted: the graph split of a tower that is not a plain ``nn.Sequential``.
    """

    stages: tuple[nn.Module, ...]
    names: tuple[str, ...]
    extracted: ExtractedChain | None = None

    def bind(self, branch: BranchCall, inputs: Sequence[Any]) -> tuple[torch.Tensor,
                                                                      SideInputs | None]:
        """The chain input a_0 of ``branch`` for the model inputs ``inputs``, and its side
        values (None for a declared chain); a graph prelude runs here."""
        x = inputs[branch.input]
        if self.extracted is None:
            return x, None
        args, kwargs = branch.bind(inputs)
        return self.extracted.bind((x, *args), kwargs)


def tower_chain(tower: nn.Module, name: str, branch: BranchCall,
                inputs: Sequence[Any]) -> TowerChain:
    """Cut ``tower`` (called by ``branch``) into stages.

    Raises:
        CaptureError: a tower that is not a Sequential cannot be captured.
    """
    args, kwargs = branch.bind(inputs)
    x = inputs[branch.input]
    if declared(tower, args, kwargs):
        parts = flatten_stages(tower)
        return TowerChain(tuple(parts), tuple(f"{name}.{n}" for n in stage_names(tower, parts)))
    chain = extract(tower, (x, *args), kwargs)
    return TowerChain(tuple(chain.stages), tuple(f"{name}.{n}" for n in chain.names), chain)


@contextlib.contextmanager
def given_towers(split: TowerSplit, outputs: Sequence[torch.Tensor],
                 inputs: Sequence[Any]) -> Iterator[None]:
    """Within the block, the c-th call of each tower returns the output of the branch that
    made the c-th call when the towers were found, after checking that it gets the same
    model input. On leaving, every tower must have been called as often as then.

    Raises:
        ScheduleError: the forward calls the towers differently than when they were found.
    """
    pending = {t: deque(split.calls_of(t)) for t in range(len(split.towers))}
    saved = [m.__dict__.get("forward") for m in split.towers]

    def stand_in(t: int) -> Any:
        def forward(*args: Any, **kwargs: Any) -> torch.Tensor:
            if not pending[t]:
                raise ScheduleError(f"tower {split.names[t]} is called more often than when the "
                                    "plan's profile was taken")
            j = pending[t].popleft()
            if not args or args[0] is not inputs[split.branches[j].input]:
                raise ScheduleError(f"call {j + 1} of the towers ({split.names[t]}) does not get "
                                    f"input {split.branches[j].input + 1} of the model, as when "
                                    "the plan's profile was taken")
            return outputs[j]
        return forward

    for t, m in enumerate(split.towers):
        m.forward = stand_in(t)
    try:
        yield
        left = [split.names[t] for t, q in pending.items() if q]
        if left:
            raise ScheduleError(f"towers {', '.join(left)} are called fewer times than when the "
                                "plan's profile was taken")
    finally:
        for m, before in zip(split.towers, saved, strict=True):
            if before is None:
                del m.forward
            else:
                m.forward = before
