"""Running a multichain plan on a model of towers joined at the loss.

:class:`TowersPlan` is what the planned view ``plan.wrap(model)`` returns runs for a plan
of the multichain algorithms (:mod:`chainplan.executors.view`: the view is the model, only
its training forward differs). Called like the model (``net(images, tokens)``), it

1. finds the towers and cuts each into its stages at the first call with each kind of input
   (as the profile did: :mod:`chainplan.towers.detect`, :mod:`chainplan.towers.parts`);
2. runs the plan's forward phase: the operations of every branch before the joint loss, on
   one :class:`~chainplan.executors.runner.Runner` per branch (a shared tower's stages run
   on each branch's own tensors);
3. runs the model's own forward with each tower call returning its branch's output through
   one autograd node, :class:`_TowersJoin`, and returns what the model returns (the
   embeddings, or the loss it computes);
4. when the training script's backward reaches that node, it has the gradients of every
   tower output at once (the loss is joint: spec §10.9) and runs the plan's backward phase,
   the backward segments of the branches in the plan's order with their recomputations,
   dropping each input gradient that is not kept (``free_grad``) and handing the kept ones
   to autograd.

Weight gradients accumulate as in the plain model; a tower shared by several inputs gets
the sum of its branches' contributions, in the plan's order rather than autograd's, so the
gradients equal the plain model's up to floating-point reassociation (docs/multichain.md).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors.runner import Runner
from chainplan.executors.view import Planned
from chainplan.graph.chain import args_key
from chainplan.ops import Op
from chainplan.plandoc import PlanDocument
from chainplan.runtime.side import SideInputs
from chainplan.towers.detect import TowerSplit, find_towers, input_name, model_inputs
from chainplan.towers.parts import TowerChain, given_towers, tower_chain

__all__ = ["TowersPlan"]


@dataclass(frozen=True)
class _Setup:
    """The towers of one kind of call and their chains."""

    split: TowerSplit
    chains: tuple[TowerChain, ...]


class _Step:
    """One training step's branches: their runners, side values, and the plan's backward."""

    def __init__(self, runners: list[Runner], sides: list[SideInputs | None],
                 backward_ops: tuple[Op, ...], keep_grad: list[bool]) -> None:
        self.runners: list[Runner] | None = runners
        self.sides = sides
        self.backward_ops = backward_ops
        self.keep_grad = keep_grad  # branches whose input gradient goes back to autograd
        self.outputs: list[torch.Tensor] = []

    def backward(self, grads: Sequence[torch.Tensor | None]) -> list[torch.Tensor | None]:
        runners = self.runners
        if runners is None:
            raise ScheduleError("the backward of a chainplan step ran twice: a step cannot be "
                                "backpropagated a second time (retain_graph is not supported)")
        self.runners = None
        for r, g in zip(runners, grads, strict=True):
            if g is None:  # the result does not depend on this tower
                meta = r.out_meta.get(len(r.stages))
                g = torch.zeros(meta[0], dtype=meta[1], device=r.device) if meta else None
            r.delta = g
            del g
        del grads
        for op in self.backward_ops:
            j = op.branch - 1
            if op.kind == "free_grad":
                runners[j].delta = None
                continue
            with _scope(self.sides[j]):
                runners[j].run(op)
        return [r.delta if keep else None for r, keep in zip(runners, self.keep_grad, strict=True)]


def _scope(side: SideInputs | None) -> contextlib.AbstractContextManager[None]:
    return side.scope() if side is not None else contextlib.nullcontext()


class _TowersJoin(torch.autograd.Function):
    """Forward: the tower outputs, to the model's join. Backward: the plan's backward phase,
    with every output gradient at once; it returns the kept input gradients and an empty
    gradient to each graph-split tower's side join."""

    @staticmethod
    def forward(ctx: Any, step: _Step, anchor: torch.Tensor, n_inputs: int,
                *rest: torch.Tensor) -> tuple[torch.Tensor, ...]:
        ctx.step = step
        ctx.n_inputs = n_inputs
        ctx.anchors = [a.new_zeros(0) for a in rest[n_inputs:]]
        outs, step.outputs = tuple(step.outputs), []
        return outs

    @staticmethod
    def backward(ctx: Any, *grads: torch.Tensor | None) -> tuple[torch.Tensor | None, ...]:
        step: _Step = ctx.step
        ctx.step = None
        deltas = step.backward(grads)
        del grads
        inputs = [d for d, keep in zip(deltas, step.keep_grad, strict=True) if keep]
        return (None, None, None, *inputs, *ctx.anchors)


class TowersPlan(Planned):
    """A multichain plan run on a model of towers joined at the loss (module docstring):
    what the planned view ``plan.wrap(model)`` returns runs. Under ``torch.no_grad()`` the
    view is the plain model.

    Args:
        model: the model the plan was made for.
        plan: a plan of the ``multichain`` algorithms for that model's towers.

    Attributes:
        plan: the plan.

    Raises:
        ScheduleError: at construction, a malformed plan; at the first call with a kind of
            input, towers that do not match the plan (their number or stages), an input
            that needs a gradient the plan drops.
        TowersError: the model is not towers joined at the loss for this call.
    """

    def __init__(self, model: nn.Module, plan: PlanDocument) -> None:
        super().__init__(model)
        if plan.multichain is None:
            raise ScheduleError(f"a {plan.algo} plan schedules one chain, not towers joined at "
                                "the loss")
        plan.validate()
        self.plan = plan
        self._setups: dict[Hashable, _Setup] = {}
        seq = plan.sequence
        cut = next(i for i, op in enumerate(seq) if op.branch == 0)
        self.forward_ops = seq[:cut]
        self.backward_ops = seq[cut + 2:]
        self.lengths = plan.multichain.lengths(seq)
        self.recomputed = [frozenset(q for q in range(1, n + 1)
                                     if sum(1 for op in seq if op.branch == j + 1 and op.stage == q
                                            and op.kind != "B") > 1)
                           for j, n in enumerate(self.lengths)]

    def rewrap(self, model: nn.Module) -> TowersPlan:
        return TowersPlan(model, self.plan)

    def executor(self, *args: Any, **kwargs: Any) -> _Setup:
        """The towers and their chains for calls like this one (found now if new)."""
        key: Hashable = (args_key(args, kwargs), self.model.training)
        got = self._setups.get(key)
        if got is not None:
            return got
        split = find_towers(self.model, args, kwargs, required=True)
        inputs = model_inputs(args, kwargs)
        assert split is not None
        m = self.plan.multichain
        assert m is not None
        if len(split.branches) != m.branches:
            raise ScheduleError(f"the plan is for {m.branches} towers joined at the loss, the "
                                f"model calls {len(split.branches)} for this input")
        chains = []
        for t, tower in enumerate(split.towers):
            first = split.branches[split.calls_of(t)[0]]
            chains.append(tower_chain(tower, split.names[t], first, inputs))
        for j, b in enumerate(split.branches):
            have = len(chains[b.tower].stages)
            if have != self.lengths[j]:
                raise ScheduleError(f"the plan gives branch {j + 1} ({split.names[b.tower]}) "
                                    f"{self.lengths[j]} stages, the tower has {have}: plan from "
                                    "a profile of this model taken with the same kind of input")
            x = inputs[b.input]
            if x.requires_grad and not m.keep_input_grad[j]:
                raise ScheduleError(f"model {input_name(b.input, args, kwargs)} needs a "
                                    "gradient, but the plan drops "
                                    f"branch {j + 1}'s input gradient: profile with inputs that "
                                    "need gradients as they do in training")
        got = self._setups[key] = _Setup(split, tuple(chains))
        return got

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        inputs = model_inputs(args, kwargs)
        s = self.executor(*args, **kwargs)
        split = s.split
        runners: list[Runner] = []
        sides: list[SideInputs | None] = []
        keep = [bool(inputs[b.input].requires_grad) for b in split.branches]
        for j, b in enumerate(split.branches):
            chain = s.chains[b.tower]
            x, side = chain.bind(b, inputs)
            if keep[j] and x is not inputs[b.input]:
                raise ScheduleError(f"model {input_name(b.input, args, kwargs)} needs a "
                                    "gradient, but tower "
                                    f"{split.names[b.tower]} computes its chain input from it in "
                                    "a prelude: not supported")
            runners.append(Runner(list(chain.stages), x, self.recomputed[j]))
            sides.append(side)
        for op in self.forward_ops:
            j = op.branch - 1
            with _scope(sides[j]):
                runners[j].run(op)
        outs = [r.hand_over_output() for r in runners]
        step = _Step(runners, sides, self.backward_ops, keep)
        step.outputs = outs
        grad_inputs = [inputs[b.input] for b, k in zip(split.branches, keep, strict=True) if k]
        anchors = [side.anchor for side in sides if side is not None and side.anchor is not None]
        joined = _TowersJoin.apply(step, _anchor(outs[0].device), len(grad_inputs), *grad_inputs,
                                   *anchors)
        heads = [functools.partial(s.chains[b.tower].finish, side=side)
                 for b, side in zip(split.branches, sides, strict=True)]
        with given_towers(split, joined, inputs, heads):
            return self.model(*args, **kwargs)


def _anchor(device: torch.device) -> torch.Tensor:
    """An empty tensor needing a gradient: autograd then calls the join's backward whether or
    not the towers' inputs need gradients (integer token ids, data batches)."""
    return torch.empty(0, device=device, requires_grad=True)
