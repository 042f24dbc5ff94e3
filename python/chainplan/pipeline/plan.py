"""The pipeline plan users hold: the ``chainplan.pipeline/v1`` document
(:class:`~chainplan.pipeline.document.PipelineDocument`) with how it is loaded from the store
and run.

The document is read, checked and drawn without torch; :meth:`PipelinePlan.runner` and
:meth:`PipelinePlan.run` import the executor (:mod:`chainplan.pipeline.runner`, which needs
torch) when called: an optional heavy dependency. The executor reads the document type, never
this module, so the two do not import each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chainplan import _bind
from chainplan.arguments import typed
from chainplan.errors import ArgumentTypeError, ScheduleError
from chainplan.jsonfields import same_kind
from chainplan.pipeline.document import (
    FORMAT,
    Link,
    OpName,
    PatternOp,
    PipelineDocument,
    PlanStage,
    Recompute,
)

if TYPE_CHECKING:
    import torch
    from torch import nn

    from chainplan.pipeline.measure import LossFn, PipelineExecution
    from chainplan.pipeline.runner import PipelineRunner

__all__ = ["FORMAT", "Link", "OpName", "PatternOp", "PipelinePlan", "PlanStage", "Recompute"]


class PipelinePlan(PipelineDocument):
    """A pipeline plan (:class:`~chainplan.pipeline.document.PipelineDocument` has its
    attributes), as :func:`chainplan.pipeline.pipeline_plan` returns it: it also loads from the
    store (:meth:`load`) and runs (:meth:`runner`, :meth:`run`)."""

    @classmethod
    def load(cls, plan_id: int) -> PipelinePlan:
        """The stored pipeline plan ``plan_id``, as :func:`chainplan.pipeline.pipeline_plan`
        returned it.

        Raises:
            ArgumentTypeError: ``plan_id`` is not an integer.
            NotFoundError: no such plan.
            ScheduleError: the plan is not a pipeline plan.
        """
        if isinstance(plan_id, bool) or not isinstance(plan_id, int):
            raise ArgumentTypeError(f"plan_id must be an integer (got {typed(plan_id)})")
        stored = _bind.plan_document(plan_id)  # NotFoundError for a missing plan
        doc = stored["plan"] or {}
        # Any version of a pipeline plan goes on: from_dict names one it does not read.
        if not same_kind(str(doc.get("format")), FORMAT):
            raise ScheduleError(f"plan {plan_id} is a {doc.get('algo', '?')} plan, not a "
                                f"pipeline plan")
        return cls.from_dict(doc, plan_id=plan_id, run_id=int(stored["run_id"]),
                             layer_param_bytes=stored["layer_param_bytes"])

    def runner(self, model: nn.Module, **kwargs: Any) -> PipelineRunner:
        """This rank's executor of the plan for ``model``: see
        :class:`~chainplan.pipeline.runner.PipelineRunner`, whose keyword arguments this
        passes on. Call it on every rank after ``torch.distributed.init_process_group``.
        """
        from chainplan.pipeline.runner import PipelineRunner  # torch: optional, heavy

        return PipelineRunner(self, model, **kwargs)

    def run(self, model: nn.Module, x: torch.Tensor, *, target: torch.Tensor | None = None,
            loss_fn: LossFn | None = None, steps: int = 3, store: bool = True,
            **kwargs: Any) -> PipelineExecution:
        """Run the plan on every rank and measure it: a runner for ``model``, a warm-up
        step, a memory step and ``steps`` timed steps, recorded in the database next to the
        plan (see :meth:`~chainplan.pipeline.runner.PipelineRunner.measure`). Gradients
        are left as the last step computed them.
        """
        run = self.runner(model, loss_fn=loss_fn, **kwargs)
        return run.measure(x, target=target, steps=steps, store=store)

