"""Pipeline plans and their executor on ``torch.distributed.pipelining``.

:class:`PipelinePlan` (torch-free, :mod:`~chainplan.pipeline.plan`) is a
``chainplan.pipeline/v1`` plan; :func:`pipeline_plan` asks the Go planner for one;
:class:`PipelineRunner` (:mod:`~chainplan.pipeline.runner`) runs it on every rank;
:func:`reference_step` is the one-process step it reproduces; :func:`pipesim` simulates
pipeline schedules (GPipe, 1F1B, PipeDream, 2BW, TiMePReSt) on a profile or a plan.
docs/pipeline.md has the guide.

Names are imported on first use, so that reading plans does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chainplan._lazy import lazy_names

if TYPE_CHECKING:
    from chainplan.pipeline.measure import PipelineExecution
    from chainplan.pipeline.plan import PipelinePlan
    from chainplan.pipeline.reference import reference_step
    from chainplan.pipeline.requests import pipeline_plan
    from chainplan.pipeline.runner import PipelineRunner
    from chainplan.simulating import pipesim

__all__ = ["PipelineExecution", "PipelinePlan", "PipelineRunner", "pipeline_plan", "pipesim",
           "reference_step"]

_WHERE = {
    "PipelineExecution": "chainplan.pipeline.measure",
    "PipelinePlan": "chainplan.pipeline.plan",
    "PipelineRunner": "chainplan.pipeline.runner",
    "pipeline_plan": "chainplan.pipeline.requests",
    "reference_step": "chainplan.pipeline.reference",
    "pipesim": "chainplan.simulating",
}


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
