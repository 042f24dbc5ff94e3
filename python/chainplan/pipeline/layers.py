"""The model's layers as the pipeline runner runs them: declared, or cut from its graph.

An ``nn.Sequential`` called with one tensor is the chain of its declared layers (its
children, flattened by :func:`chainplan.stages.flatten_stages`). Any other model (a
transformer looping over a ``ModuleList``, one taking an attention mask) is captured with
``torch.export`` and cut into the chain ``chainplan.profile`` measured: the same capture of
the same model and kind of input (:func:`chainplan.graph.chain.extract`), so the runner
needs one micro-batch's call of the model (``example=``) to capture it before any step.

The layers of a captured model may read **side values** that no layer produces (a mask
built once, position embeddings): every rank computes them itself for each micro-batch it
runs (the chain's prelude, from the step's inputs, which every rank is given) and binds
them while its stages run that micro-batch, in their forwards and in a recomputation. When
a side value needs a gradient (it depends on trained weights), each rank backpropagates
what its own stages sent into it at the end of the step.

A parameter that layers on several ranks read (tied weights), or that the prelude reads,
gets a part of its gradient on each of them: the ranks sum their parts
(:meth:`ModelLayers.reduce_shared`), so that every rank that updates it holds the gradient
one process would.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.utils import _pytree as pytree

from chainplan.errors import ScheduleError
from chainplan.graph.chain import ExtractedChain, extract
from chainplan.graph.split import declared
from chainplan.pipeline.document import PipelineDocument
from chainplan.pipeline.reference import split_call
from chainplan.runtime.side import SideInputs
from chainplan.sequential import flatten_stages

__all__ = ["ModelLayers"]


def _param_bytes(m: nn.Module) -> int:
    return sum(p.numel() * p.element_size() for p in m.parameters())


class ModelLayers:
    """The chain's layers of a model, and what its captured layers need to run.

    Args:
        plan: the plan (its layer count and, for plans of a profile, each layer's weights
            are checked).
        model: the model, built alike on every rank.
        example: for a model that is not an ``nn.Sequential`` called with one tensor, the
            positional arguments of one micro-batch's call (a tensor, or a tuple whose first
            element is the chain input), as ``chainplan.profile`` was given them.
        example_kwargs: that call's keyword arguments.

    Raises:
        ScheduleError: a captured model without ``example``, a chain whose layer count or
            weights are not the plan's.
        CaptureError: the model cannot be captured.
    """

    def __init__(self, plan: PipelineDocument, model: nn.Module, example: Any = None,
                 example_kwargs: dict[str, Any] | None = None) -> None:
        self.chain: ExtractedChain | None = None
        args = () if example is None else (example if isinstance(example, tuple) else (example,))
        kwargs = dict(example_kwargs or {})
        if isinstance(model, nn.Sequential) and declared(model, args[1:], kwargs):
            self.layers: list[nn.Module] = flatten_stages(model)
            what = "its flattened nn.Sequential"
        else:
            if not args or not isinstance(args[0], torch.Tensor):
                raise ScheduleError(
                    f"{type(model).__name__} is not an nn.Sequential: the runner cuts it from "
                    f"its graph, as chainplan.profile did, and needs one micro-batch's call of "
                    f"the model to capture it: pass example=x_microbatch (or a tuple of the "
                    f"positional arguments) and example_kwargs= for the keyword ones")
            was = model.training
            model.train()
            try:
                self.chain = extract(model, args, kwargs)
            finally:
                model.train(was)
            self.layers = list(self.chain.stages)
            what = "the chain cut from its graph (chainplan.stages(model, ...) shows it)"
        if len(self.layers) != plan.num_layers:
            raise ScheduleError(f"the model has {len(self.layers)} layers ({what}) but the "
                                f"plan's stages cover {plan.num_layers}")
        if plan.layer_param_bytes is not None:
            for i, (layer, want) in enumerate(zip(self.layers, plan.layer_param_bytes,
                                                  strict=True)):
                got = _param_bytes(layer)
                if got != want:
                    name = getattr(layer, "stage_name", type(layer).__name__)
                    raise ScheduleError(
                        f"layer {i + 1} ({name}) has {got} bytes of parameters but the "
                        f"profile the plan was made from has {want}: not the same model")
        self.shared = self._shared(plan)
        self._calls: list[tuple[torch.Tensor, tuple[Any, ...], dict[str, Any]]] = []
        self._sides: dict[int, SideInputs] = {}

    def _shared(self, plan: PipelineDocument) -> list[nn.Parameter]:
        """The parameters whose gradient comes in parts from several ranks, in a fixed
        order (every rank computes the same list)."""
        ranks: dict[int, set[int]] = {}
        params: dict[int, nn.Parameter] = {}
        for s in plan.stages:
            for layer in self.layers[s.first - 1:s.last]:
                for p in layer.parameters():
                    ranks.setdefault(id(p), set()).add(s.gpu)
                    params[id(p)] = p
        shared = {k for k, rs in ranks.items() if len(rs) > 1}
        # In an order every rank computes alike: the layers' parameters, then the prelude's
        # in the order it reads them (never a set's order, which follows addresses).
        order = list(dict.fromkeys(id(p) for layer in self.layers for p in layer.parameters()))
        if self.chain is not None and self.chain.prelude is not None:
            for r in self.chain.prelude_reads:
                owner = r.owner() if r.kind == "state" and r.parameter and r.owner else None
                if owner is not None:
                    p = getattr(owner, r.attr)
                    params[id(p)] = p
                    shared.add(id(p))
                    if id(p) not in order:
                        order.append(id(p))
        return [params[k] for k in order if k in shared]

    def begin_step(self, x: torch.Tensor, args: Sequence[Any], kwargs: dict[str, Any],
                   microbatches: int) -> tuple[torch.Tensor, ...]:
        """Split one step's call into micro-batches and forget the last step's side
        values; returns the micro-batches of the chain input.

        Raises:
            ScheduleError: a batch that does not split, or extra arguments for a model
                declared as an ``nn.Sequential`` (whose layers take one tensor).
        """
        if self.chain is None and (args or kwargs):
            raise ScheduleError("the model is an nn.Sequential: its layers take one tensor, "
                                "so step() takes the input (and target=) only")
        self._calls = split_call(x, args, kwargs, microbatches)
        self._sides = {}
        return tuple(c[0] for c in self._calls)

    @contextlib.contextmanager
    def side(self, microbatch: int, device: torch.device) -> Iterator[None]:
        """Bind micro-batch ``microbatch``'s side values while the stage runs (computed on
        first use, on ``device``); nothing for a declared chain."""
        if self.chain is None:
            yield
            return
        side = self._sides.get(microbatch)
        if side is None:
            x, args, kwargs = self._calls[microbatch]
            moved = pytree.tree_map(lambda v: v.to(device) if isinstance(v, torch.Tensor) else v,
                                    ((x, *args), kwargs))
            with torch.enable_grad():
                _, side = self.chain.bind(moved[0], moved[1])
            self._sides[microbatch] = side
        with side.scope():
            yield

    def forget_sides(self) -> None:
        """Drop the side values computed so far in this step (those of torch's shape
        inference, whose backward may have left gradients in them)."""
        self._sides = {}

    def finish_step(self, group: Any, params: Sequence[nn.Parameter], microbatches: int) -> None:
        """After a step's backwards: pass the side values' gradients on to what computed
        them, divide the gradients of this rank's ``params`` by the micro-batch count once
        (the mean-reduced loss of the whole batch; a parameter two stages of one rank read,
        a tied weight, must not be divided twice, as torch's per-stage scaling would), then
        sum the shared parameters' gradients over the ranks (a collective: every rank calls
        it)."""
        for side in self._sides.values():
            pairs = [(s, g) for s, g in zip(side.sources, side.leaf_grads(), strict=True)
                     if g is not None]
            for leaf in side.leaves:
                leaf.grad = None
            if pairs:
                torch.autograd.backward([s for s, _ in pairs], [g for _, g in pairs])
        self._sides = {}
        with torch.no_grad():
            for p in params:
                if p.grad is not None:
                    p.grad.div_(microbatches)
        self.reduce_shared(group)

    def reduce_shared(self, group: Any) -> None:
        """Sum the gradients of the shared parameters over the ranks of ``group``."""
        for p in self.shared:
            g = p.grad if p.grad is not None else torch.zeros_like(p)
            dist.all_reduce(g, group=group)
            p.grad = g
