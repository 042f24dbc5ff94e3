"""Running a plan on a model whose chain was extracted from its graph.

:class:`GraphChainExecutor` is what ``plan.wrap(model)`` returns for a model that is not an
``nn.Sequential``. It is called like the model (``net(idx, mask=mask)``), captures and
splits the model at the first call with each kind of input (the split is the one
``chainplan.profile`` measured: the same capture of the same model), runs the prelude that
computes the step's side values, and hands the chain input and those values to a
:class:`~chainplan.executors.CheckpointedChain` (or an
:class:`~chainplan.executors.OffloadedChain` for an offloading plan) built on the stages.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import torch
from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors import compiled
from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.offload import OffloadedChain
from chainplan.graph.chain import ExtractedChain, extract, input_key
from chainplan.schedule import Plan

__all__ = ["GraphChainExecutor", "adopt"]


def adopt(wrapper: nn.Module, model: nn.Module) -> None:
    """Register ``model``'s children, parameters and buffers on ``wrapper`` under their own
    names (the same objects): ``wrapper.state_dict()`` has exactly ``model``'s keys."""
    for key, child in model.named_children():
        wrapper.add_module(key, child)
    for key, p in model.named_parameters(recurse=False):
        wrapper.register_parameter(key, p)
    for key, b in model.named_buffers(recurse=False):
        wrapper.register_buffer(key, b, persistent=key not in model._non_persistent_buffers_set)


class GraphChainExecutor(nn.Module):
    """An ``nn.Module`` that trains a graph-extracted chain with a planned schedule.

    Call it as the model: its first tensor argument is the chain input, the others (and
    keyword arguments) are side inputs. Under ``torch.no_grad()`` it is the plain model.
    Its parameters and buffers are the model's own, under the model's names.

    Args:
        model: the model the plan was made for (its profile's split).
        plan: a plan for that chain.

    Raises:
        ScheduleError: at construction, a malformed plan; at the first call with a kind of
            input, a plan for another number of stages than the split has.
    """

    def __init__(self, model: nn.Module, plan: Plan) -> None:
        super().__init__()
        plan.validate()
        self.__dict__["_model"] = model
        self.plan = plan
        adopt(self, model)
        # By kind of input: the split and its executor (plain attributes: state_dict()
        # keeps the model's keys).
        self.__dict__["_chains"] = {}

    @property
    def model(self) -> nn.Module:
        """The wrapped model."""
        wrapped: nn.Module = self.__dict__["_model"]
        return wrapped

    def train(self, mode: bool = True) -> GraphChainExecutor:
        super().train(mode)
        self.model.train(mode)
        return self

    @compiled.eager
    def executor(self, *args: Any,
                 **kwargs: Any) -> tuple[ExtractedChain, CheckpointedChain | OffloadedChain]:
        """The split and executor for calls like this one (captured now if new, always
        outside ``torch.compile``: the capture is torch.export's)."""
        key = input_key(self.model, args, kwargs)
        chains: dict[Hashable, tuple[ExtractedChain, CheckpointedChain | OffloadedChain]] = (
            self.__dict__["_chains"])
        entry = chains.get(key)
        if entry is None:
            chain = extract(self.model, args, kwargs)
            if len(chain.stages) != self.plan.num_stages:
                raise ScheduleError(
                    f"the plan is for {self.plan.num_stages} stages, but the chain extracted "
                    f"from {type(self.model).__name__} for this input has {len(chain.stages)} "
                    "(chainplan.stages(model, ...) shows it): plan from a profile of this "
                    "model taken with the same kind of input")
            net: CheckpointedChain | OffloadedChain
            if self.plan.offload is not None:
                net = OffloadedChain(chain.stages, self.plan)
            else:
                net = CheckpointedChain(chain.stages, self.plan)
            entry = chains[key] = (chain, net)
        return entry

    @compiled.entry
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if not torch.is_grad_enabled():
            return self.model(*args, **kwargs)
        chain, net = self.executor(*args, **kwargs)
        # The checkpointing executor records one graph per step: its stages read the side
        # values themselves. The stage-by-stage one joins their gradients (SideInputs).
        x, side = chain.bind(args, kwargs, join=isinstance(net, OffloadedChain))
        return net(x, side)
