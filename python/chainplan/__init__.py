"""chainplan: profile a PyTorch chain model, store the profile, plan memory-saving schedules.

The top level is what a training script needs::

    import chainplan
    net = chainplan.Checkpointed(model, budget="2GiB")                   # all of it, lazily

    prof = chainplan.profile(model, sample, loss_fn=loss_fn, target=y)  # measure, store
    plan = chainplan.plan(prof, budget="2GiB", algo="rotor")             # Go planner
    net = plan.wrap(model)                                               # runs the schedule
    rows = chainplan.query("SELECT * FROM runs")                         # pyarrow.Table
    print(prof.summary(), chainplan.stages(model, sample))  # stage table; the split
    net = chainplan.parallelize(model, mesh, candidate)  # tp, pp, checkpointing, FSDP2/DDP

Each family of planners has its namespace, imported on first use:

* ``chainplan.tradeoff``: ``frontier``, ``min_budget``, ``plot_frontier`` (the makespan at
  every budget);
* ``chainplan.history``: ``runs``, ``plot_history`` (predicted against measured, stored);
  ``chainplan.reuse.find_profile``;
* ``chainplan.pipeline``: ``pipeline_plan``, ``PipelinePlan``, ``pipesim``::

      pp = chainplan.pipeline.pipeline_plan(prof, gpus=4, memory="16GiB",
                                            bandwidth="12GB/s", microbatches=8)
      runner = pp.runner(model, loss_fn=loss_fn)            # on every rank (torchrun)

* ``chainplan.parallel``: ``advise``, ``search3d``, ``Advice``, ``Search3D`` (past one
  device), ``record_link`` (a measured link bandwidth the advisors then use);
* ``chainplan.towers`` (models of several towers) and ``chainplan.offloading`` (pofo's
  offloading executor).

The old top-level names of those (``chainplan.pipesim``, ``chainplan.frontier``, ...) still
work for one release and warn with their new home (:class:`DeprecationWarning`).

Public names are imported on first use, so that the torch-free modules
(``chainplan.schedule``, ``chainplan.schema``, ``chainplan.errors``) load without torch.
``chainplan.__version__`` is the installed version (pyproject.toml's).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chainplan._lazy import lazy_names

if TYPE_CHECKING:
    __version__: str  # chainplan._version's, read on first use
    from chainplan.api import measure, plan, profile, record
    from chainplan.checkpointed import Checkpointed
    from chainplan.errors import ChainplanError, InfeasibleBudget
    from chainplan.history import query
    from chainplan.launch.build import parallelize
    from chainplan.schedule import Plan
    from chainplan.stages import stages
    from chainplan.withloss import WithLoss

#: What a training script needs (issue 37: at most 12 names); the families are namespaces.
__all__ = [
    "profile",
    "record",
    "plan",
    "measure",
    "query",
    "stages",
    "Checkpointed",
    "WithLoss",
    "Plan",
    "ChainplanError",
    "InfeasibleBudget",
    "parallelize",
]

_WHERE = {
    "__version__": "chainplan._version",  # the distribution's, pyproject.toml's
    "profile": "chainplan.api",
    "record": "chainplan.api",
    "plan": "chainplan.api",
    "measure": "chainplan.api",
    "query": "chainplan.history",
    "stages": "chainplan.stages",
    "Checkpointed": "chainplan.checkpointed",
    "WithLoss": "chainplan.withloss",
    "Plan": "chainplan.schedule",
    "ChainplanError": "chainplan.errors",
    "InfeasibleBudget": "chainplan.errors",
    "parallelize": "chainplan.launch.build",
}

#: The family namespaces, imported on first read (``chainplan.pipeline.pipesim``).
_FAMILIES = ("tradeoff", "history", "reuse", "pipeline", "parallel", "towers", "offloading")

#: The old top-level names of the families' functions and types, and their homes: they
#: read the same objects and warn (for one release).
MOVED = {
    "frontier": "chainplan.tradeoff.frontier",
    "min_budget": "chainplan.tradeoff.min_budget",
    "plot_frontier": "chainplan.tradeoff.plot_frontier",
    "Frontier": "chainplan.tradeoff.Frontier",
    "runs": "chainplan.history.runs",
    "plot_history": "chainplan.history.plot_history",
    "find_profile": "chainplan.reuse.find_profile",
    "pipeline_plan": "chainplan.pipeline.pipeline_plan",
    "PipelinePlan": "chainplan.pipeline.PipelinePlan",
    "pipesim": "chainplan.pipeline.pipesim",
    "advise": "chainplan.parallel.advise",
    "search3d": "chainplan.parallel.search3d",
    "Advice": "chainplan.parallel.Advice",
    "Search3D": "chainplan.parallel.Search3D",
}


__getattr__, __dir__ = lazy_names(__name__, _WHERE, globals(), submodules=_FAMILIES,
                                  moved=MOVED)
