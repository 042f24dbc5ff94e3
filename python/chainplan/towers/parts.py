"""The chain of each tower, and the model's forward with its towers' results given.

A tower is cut into stages as any chain is: an ``nn.Sequential`` called with its input alone
is the chain of its declared stages, any other tower is captured and split from its graph
(:func:`chainplan.graph.chain.extract`), the profile and the executor sharing the capture.
The *join* (everything the forward does outside the towers, the joint loss of the
multi-chain model) is the model's own forward run while each tower call returns a tensor it
is given (:func:`given_towers`): no copy of the forward's code is made.

A tower that returns a structure (a HuggingFace ``ModelOutput`` with ``last_hidden_state``
and ``pooler_output``) is captured with a light head: its chain ends at the tensor every
returned value is computed from, and the head after it (a pooling, a LayerNorm, SigLIP's
attention-pooling block: at most :data:`HEAD_PARAM_SHARE` of the tower's parameters) runs
in the join, under autograd, rebuilding the object the tower returns with every field
(:meth:`TowerChain.finish`). Integer values the head reads that come from the tower's input
(the end-of-text positions a text pooler gathers) are side values, not activations.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.graph.chain import ExtractedChain, extract
from chainplan.graph.split import declared, stage_names
from chainplan.runtime.side import SideInputs
from chainplan.sequential import flatten_stages
from chainplan.towers.detect import BranchCall, TowerSplit, tower_input

__all__ = ["HEAD_PARAM_SHARE", "TowerChain", "given_towers", "tower_chain"]

#: The largest share of a tower's parameters its head (what runs after the chain's end, in
#: the join) may hold. The join's measured cost includes the head, so the plan's memory
#: holds whatever its size; the bound keeps the chain most of the tower, and refuses a tower
#: asked for its hidden states (``output_hidden_states=True``: the chain would end at the
#: embeddings). SigLIP's attention-pooling head holds 8 % of its vision tower at base size
#: and 29 % in the tests' two-layer configuration.
HEAD_PARAM_SHARE = 0.5


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
        return self.extracted.bind(args, kwargs)

    def finish(self, end: torch.Tensor, side: SideInputs | None) -> Any:
        """What the tower returns for its chain's end ``end``: ``end`` itself, or the object
        the tower's head builds from it (under autograd, with the branch's side values)."""
        if self.extracted is None or self.extracted.outputs.plain:
            return end
        assert side is not None
        with side.scope():
            return self.extracted.finish(end)

    def run(self, branch: BranchCall, inputs: Sequence[Any]) -> torch.Tensor:
        """The chain's end for ``branch``, its stages run one after the other (no
        checkpointing; under the caller's grad mode)."""
        x, side = self.bind(branch, inputs)
        with side.scope() if side is not None else contextlib.nullcontext():
            for stage in self.stages:
                x = stage(x)
        return x


def tower_chain(tower: nn.Module, name: str, branch: BranchCall,
                inputs: Sequence[Any]) -> TowerChain:
    """Cut ``tower`` (called by ``branch``) into stages.

    Raises:
        CaptureError: a tower that is not a Sequential cannot be captured.
    """
    others, other_kwargs = branch.others(inputs)
    if declared(tower, others, other_kwargs):
        parts = flatten_stages(tower)
        return TowerChain(tuple(parts), tuple(f"{name}.{n}" for n in stage_names(tower, parts)))
    args, kwargs = branch.bind(inputs)
    chain = extract(tower, args, kwargs, epilogue_share=HEAD_PARAM_SHARE, index_side=True)
    return TowerChain(tuple(chain.stages), tuple(f"{name}.{n}" for n in chain.names), chain)


@contextlib.contextmanager
def given_towers(split: TowerSplit, outputs: Sequence[torch.Tensor], inputs: Sequence[Any],
                 finish: Sequence[Callable[[torch.Tensor], Any]] | None = None
                 ) -> Iterator[None]:
    """Within the block, the c-th call of each tower returns the output of the branch that
    made the c-th call when the towers were found (``finish[j](outputs[j])`` with
    ``finish``: the tower's head, :meth:`TowerChain.finish`), after checking that it gets
    the same model input. On leaving, every tower must have been called as often as then.

    Raises:
        ScheduleError: the forward calls the towers differently than when they were found.
    """
    pending = {t: deque(split.calls_of(t)) for t in range(len(split.towers))}
    saved = [m.__dict__.get("forward") for m in split.towers]

    def stand_in(t: int) -> Any:
        module = split.towers[t]

        def forward(*args: Any, **kwargs: Any) -> Any:
            if not pending[t]:
                raise ScheduleError(f"tower {split.names[t]} is called more often than when the "
                                    "plan's profile was taken")
            j = pending[t].popleft()
            if tower_input(module, args, kwargs) is not inputs[split.branches[j].input]:
                raise ScheduleError(f"call {j + 1} of the towers ({split.names[t]}) does not get "
                                    f"model input {split.branches[j].input + 1}, as when the "
                                    "plan's profile was taken")
            return outputs[j] if finish is None else finish[j](outputs[j])
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
