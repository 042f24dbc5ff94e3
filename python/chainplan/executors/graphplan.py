"""Running a plan on a model whose chain was extracted from its graph.

:class:`GraphPlan` is what ``plan.wrap(model)`` runs for a model that is not an
``nn.Sequential`` (the view it returns is :mod:`chainplan.executors.view`'s). A training
call captures and splits the model at the first call with each kind of input (the split is
the one ``chainplan.profile`` measured: the same capture of the same model), runs the
prelude that computes the step's side values, hands the chain input and those values to a
:class:`~chainplan.executors.CheckpointedChain` (or an
:class:`~chainplan.executors.OffloadedChain` for an offloading plan) built on the stages,
and returns what the model's forward returns, rebuilt around the chain's end by the
epilogue (:mod:`chainplan.graph.outputs`).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from torch import nn

from chainplan.errors import ScheduleError
from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.offload import OffloadedChain
from chainplan.executors.view import Planned
from chainplan.graph.call import training_call
from chainplan.graph.chain import ExtractedChain, extract, input_key
from chainplan.plandoc import PlanDocument
from chainplan.reuse import run_keeps_logits
from chainplan.runtime import compiled

__all__ = ["GraphPlan", "run_extracted"]


class GraphPlan(Planned):
    """One plan run on the chain extracted from a model, per kind of input (module
    docstring).

    Args:
        model: the model the plan was made for (its profile's split).
        plan: a plan for that chain.

    Attributes:
        plan: the plan.

    Raises:
        ScheduleError: at construction, a malformed plan; at the first call with a kind of
            input, a plan for another number of stages than the split has.
    """

    def __init__(self, model: nn.Module, plan: PlanDocument) -> None:
        super().__init__(model)
        plan.validate()
        self.plan = plan
        self._chains: dict[Hashable,
                           tuple[ExtractedChain, CheckpointedChain | OffloadedChain]] = {}

    @compiled.eager
    def executor(self, *args: Any,
                 **kwargs: Any) -> tuple[ExtractedChain, CheckpointedChain | OffloadedChain]:
        """The split and executor for calls like this one (captured now if new, always
        outside ``torch.compile``: the capture is torch.export's)."""
        args, kwargs = training_call(self.model, args, kwargs)
        key = input_key(self.model, args, kwargs)
        entry = self._chains.get(key)
        if entry is None:
            # Captured as the plan's profile was: a language model's logits kept or not.
            keep = self.plan.keep_logits
            if keep is None:
                keep = run_keeps_logits(self.plan.run_id)
            chain = extract(self.model, args, kwargs, keep_logits=keep)
            if len(chain.stages) != self.plan.num_stages:
                raise ScheduleError(
                    f"the plan is for {self.plan.num_stages} stages, but the chain extracted "
                    f"from {type(self.model).__name__} for this input has {len(chain.stages)} "
                    "(chainplan.stages(model, ...) shows it): plan from a profile of this "
                    "model taken with the same kind of input")
            runner_cls = OffloadedChain if self.plan.offload is not None else CheckpointedChain
            entry = self._chains[key] = (chain, runner_cls(chain.stages, self.plan))
        return entry

    @compiled.entry
    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        chain, net = self.executor(*args, **kwargs)
        return run_extracted(chain, net, args, kwargs)

    def rewrap(self, model: nn.Module) -> GraphPlan:
        return GraphPlan(model, self.plan)


@compiled.entry
def run_extracted(chain: ExtractedChain, net: nn.Module, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> Any:
    """One training forward: bind the call, run the chain with ``net``, finish the output.

    The checkpointing executor records one graph per step: its stages read the side values
    themselves. The stage-by-stage one joins their gradients (:class:`SideInputs`)."""
    x, side = chain.bind(args, kwargs, detach=isinstance(net, OffloadedChain))
    end = net(x, side)
    with side.scope():
        return chain.finish(end)
