"""chainplan: profile a PyTorch chain model, store the profile, plan memory-saving schedules.

Usage::

    import chainplan
    prof = chainplan.profile(model, sample, loss_fn=loss_fn, target=y)  # measure, store
    plan = chainplan.plan(prof, budget="2GiB", algo="rotor")             # Go planner
    net = plan.wrap(model)                                               # runs the schedule
    rows = chainplan.query("SELECT * FROM runs")                         # pyarrow.Table
    print(prof.summary(), chainplan.frontier(prof))    # stage table; makespan at every budget
    chainplan.plot_frontier(prof, plan=plan, path="frontier.svg")  # pictures: plan.plot() too
    chainplan.plot_history(prof)                       # predicted against measured, stored
    print(chainplan.stages(model, sample))             # the split, before measuring anything

    net = chainplan.Checkpointed(model, budget="2GiB")                   # all of it, lazily

    pp = chainplan.pipeline_plan(prof, gpus=4, memory="16GiB", bandwidth="12GB/s",
                                 microbatches=8)          # a pipeline over 4 ranks, stored
    runner = pp.runner(model, loss_fn=loss_fn)            # on every rank (torchrun)
    sim = chainplan.pipesim(prof, schedule="1f1b-flush", stages=4, microbatches=8)  # simulate

    adv = chainplan.advise(prof, "cluster.yaml", dataset_size=50_000, batch_per_device=64)
    s3 = chainplan.search3d(prof, "cluster.yaml", global_batch=512)  # past one device

Public names are imported on first use, so that the torch-free modules
(``chainplan.schedule``, ``chainplan.schema``, ``chainplan.errors``) load without torch.
``chainplan.__version__`` is the installed version (pyproject.toml's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chainplan._lazy import lazy_names

if TYPE_CHECKING:
    __version__: str  # chainplan._version's, read on first use
    from chainplan.advice import Advice, Search3D
    from chainplan.api import measure, plan, profile, record
    from chainplan.checkpointed import Checkpointed
    from chainplan.errors import ChainplanError, InfeasibleBudget
    from chainplan.history import plot_history, query, runs
    from chainplan.launch.build import parallelize
    from chainplan.parallel import advise, search3d
    from chainplan.pipeline import PipelinePlan, pipeline_plan
    from chainplan.reuse import find_profile
    from chainplan.schedule import Plan
    from chainplan.simulating import pipesim
    from chainplan.stages import stages
    from chainplan.tradeoff import Frontier, frontier, min_budget, plot_frontier
    from chainplan.withloss import WithLoss

__all__ = [
    "profile",
    "plan",
    "query",
    "record",
    "measure",
    "runs",
    "stages",
    "frontier",
    "min_budget",
    "plot_frontier",
    "plot_history",
    "Frontier",
    "Checkpointed",
    "Plan",
    "pipeline_plan",
    "PipelinePlan",
    "find_profile",
    "pipesim",
    "ChainplanError",
    "InfeasibleBudget",
    "advise",
    "search3d",
    "Advice",
    "Search3D",
    "WithLoss",
    "parallelize",
]

_WHERE = {
    "__version__": "chainplan._version",  # the distribution's, pyproject.toml's
    "pipeline_plan": "chainplan.pipeline.requests",
    "PipelinePlan": "chainplan.pipeline.plan",
    "find_profile": "chainplan.reuse",
    "pipesim": "chainplan.simulating",
    "profile": "chainplan.api",
    "plan": "chainplan.api",
    "query": "chainplan.history",
    "record": "chainplan.api",
    "measure": "chainplan.api",
    "runs": "chainplan.history",
    "stages": "chainplan.stages",
    "frontier": "chainplan.tradeoff",
    "min_budget": "chainplan.tradeoff",
    "plot_frontier": "chainplan.tradeoff",
    "plot_history": "chainplan.history",
    "Frontier": "chainplan.tradeoff",
    "Checkpointed": "chainplan.checkpointed",
    "Plan": "chainplan.schedule",
    "ChainplanError": "chainplan.errors",
    "InfeasibleBudget": "chainplan.errors",
    "advise": "chainplan.parallel",
    "search3d": "chainplan.parallel",
    "Advice": "chainplan.advice",
    "Search3D": "chainplan.advice",
    "WithLoss": "chainplan.withloss",
    "parallelize": "chainplan.launch.build",
}


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals())
