"""Asking the Go pipeline planners for a plan, and reading stored ones back.

:func:`pipeline_plan` calls ``planner/contiguous``, ``planner/pipedream`` or
``planner/madpipe`` in-process (through ``pybind.Pipeline``, which goes through the same
service as ``chainplan pipeline``) and returns a typed
:class:`~chainplan.pipeline.plan.PipelinePlan`; plans of a stored profile are recorded in
the database like every plan. :func:`load_plan` reads one back by its id.

This module never imports torch.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

from chainplan import _bind, arguments
from chainplan.errors import (
    ArgumentTypeError,
    MissingSolverWarning,
    PlanError,
)
from chainplan.pipeline.plan import PipelinePlan
from chainplan.profiler.document import Profile
from chainplan.profiler.summary import format_seconds
from chainplan.source import envelope

__all__ = ["load_plan", "pipeline_plan"]

_MODELS = ("saved", "input")



def _request(*, gpus: int, memory: int | str, bandwidth: float | str, algo: str | None,
             weight_copies: int | None, activation_model: str | None,
             headroom: float | None, temporaries: bool | None, checkpoint: bool,
             replan: bool, time_limit_s: float | None) -> dict[str, Any]:
    """The planning request in the JSON form of Go's ``pipeline.Request``, each argument's
    type checked before any work (the message names the argument).

    An argument left at None is left out: the Go request type fills in its one default,
    the same as the CLI's (``chainplan pipeline --help``). Sizes written as strings
    (``"16GiB"``, ``"12GB/s"``) and the algorithm's name go as the user wrote them: Go
    reads them once, with the CLI's rules and the planner registry, in the same crossing
    that plans.
    """
    req: dict[str, Any] = {}
    if algo is not None:
        if not isinstance(algo, str):
            raise ArgumentTypeError(f"algo must be a str such as 'madpipe' "
                                    f"(got {arguments.typed(algo)})")
        req["algo"] = algo
    for name, value in (("gpus", gpus), ("weight_copies", weight_copies)):
        if value is None and name == "weight_copies":
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentTypeError(f"{name} must be an integer (got {arguments.typed(value)})")
        if value < 1:
            raise PlanError(f"{name} must be at least 1 (got {value})")
        req[name] = value
    if activation_model is not None:
        if activation_model not in _MODELS:
            raise PlanError(f"activation_model must be 'saved' or 'input' "
                            f"(got {activation_model!r})")
        req["activation_model"] = activation_model
    if isinstance(memory, str) and memory.strip().lower() in ("min", "faster"):
        req[f"{memory.strip().lower()}_memory"] = True
    elif isinstance(memory, str):
        req["memory_bytes"] = memory
    elif isinstance(memory, bool) or not isinstance(memory, int):
        raise ArgumentTypeError(f"memory must be an int (bytes per device), a size string such "
                                f"as '16GiB', 'min' or 'faster' (got {arguments.typed(memory)})")
    elif memory <= 0:
        raise PlanError(f"memory must be positive (got {memory} bytes)")
    else:
        req["memory_bytes"] = memory
    req["bandwidth"] = bandwidth if isinstance(bandwidth, str) else arguments.bandwidth(bandwidth)
    if headroom is not None:
        if isinstance(headroom, bool) or not isinstance(headroom, int | float) \
                or not 0 <= headroom < 1:
            raise PlanError(f"headroom must be a share of the memory in [0, 1), such as 0.1 "
                            f"(got {headroom!r})")
        req["headroom"] = float(headroom)
    for name, flag in (("temporaries", temporaries), ("checkpoint", checkpoint),
                       ("replan", replan)):
        if flag is not None and not isinstance(flag, bool):
            raise ArgumentTypeError(f"{name} must be True or False (got {arguments.typed(flag)})")
    if temporaries is False:
        req["no_temporaries"] = True
    if checkpoint:
        req["checkpoint"] = True
    if replan:
        req["replan"] = True
    if time_limit_s is not None:
        if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, int | float) \
                or not time_limit_s > 0:
            raise PlanError(f"time_limit_s must be a positive number of seconds "
                            f"(got {time_limit_s!r})")
        req["time_limit_s"] = float(time_limit_s)
    return req


def pipeline_plan(source: Profile | int | str | os.PathLike[str], *, gpus: int,
                  memory: int | str, bandwidth: float | str, algo: str | None = None,
                  weight_copies: int | None = None, microbatches: int | None = None,
                  activation_model: str | None = None, headroom: float | None = None,
                  temporaries: bool | None = None, checkpoint: bool = False,
                  replan: bool = False, time_limit_s: float | None = None,
                  require_solver: bool = False) -> PipelinePlan:
    """Plan a pipeline with the Go planner, in-process.

    Profile the model at the micro-batch size (the batch one optimizer step splits into
    ``microbatches``): the planner's mini-batch, one per period, is the executor's
    micro-batch. Every option left out gets the default ``chainplan pipeline`` has (they
    live in one place, the Go request type), so the same request plans the same memory
    from Python and from the CLI.

    Args:
        source: a :class:`~chainplan.profiler.run.Profile`, a stored run id, or a chain file
            (``chainplan.chain/v1`` JSON).

    Keyword Args:
        gpus: P, the devices (ranks) to plan for.
        memory: the memory of each device: bytes (an int), a size such as ``"16GiB"`` (the
            CLI's rule, docs/CLI.md), ``"min"`` for the algorithm's smallest, or
            ``"faster"`` for the smallest at which the plan is faster than one device
            running the chain (the fastest plan, with a note, when none is).
        bandwidth: the bandwidth of each link between two devices: bytes per second, or a
            string such as ``"12GB/s"``.
        algo: ``madpipe`` (the default: one device may hold several stages),
            ``contiguous`` (the best allocation with one stage per device) or
            ``pipedream``.
        weight_copies: copies of the weights per device (default: 2, weights and
            gradients: the synchronous executor's). Add one per buffer the optimizer keeps
            per weight (3 for SGD with momentum, 4 for Adam); the runner's
            :meth:`~chainplan.pipeline.runner.PipelineRunner.measure` with the optimizer
            checks it.
        microbatches: micro-batches per optimizer step, kept with the plan for its runner
            (default: None, the runner's ``microbatches=`` then).
        activation_model: ``saved`` (the default: stage input plus what the layers saved,
            as measured) or ``input`` (the layers' inputs, the paper's model).
        headroom: the share of each device's memory the plan leaves free, in [0, 1)
            (default: 0), for what no profile measures.
        temporaries: count the operations' temporaries, the gradients in flight and the
            loss (the default, True: what a rank holds); False is the paper's model.
        checkpoint: let a stage keep only its input and recompute its activations with
            rotor at the memory its device has left (default: False).
        replan: plan again even when the same request was planned on the same stored
            profile (default: False: that plan is returned, its ``notes`` say so).
        time_limit_s: madpipe's scheduling time limit (seconds; default: the planner's).
        require_solver: raise :class:`~chainplan.errors.MissingSolverError` when madpipe's
            MILP solver is missing, instead of returning the best contiguous plan with a
            :class:`~chainplan.errors.MissingSolverWarning` (default: False). The solver is
            the HiGHS program of the ``highsbox`` package (a dependency of chainplan), or
            the program ``$CHAINPLAN_HIGHS`` names; the other algorithms run none.

    Returns:
        The :class:`~chainplan.pipeline.plan.PipelinePlan`, with its speed-up over one
        device (``plan.speedup``) and against the best plan without a memory limit
        (``plan.memory_cost``); plans of stored runs are recorded in the database
        (``plan.plan_id``) and know the weights of each layer, which the runner checks the
        model against.

    Raises:
        InfeasibleBudget: the memory is too small; ``min_budget_bytes`` is the smallest
            memory per device at which the algorithm plans, found directly.
        PlanError: a bad algorithm, size or option; ArgumentTypeError a wrong type.
        NotFoundError: no such stored run, or ``source`` names no file.
        MissingSolverError: ``require_solver`` and no MILP solver was found.

    Warns:
        MissingSolverWarning: madpipe found no MILP solver and fell back to the best
            contiguous plan (``plan.fallback == "no-milp-solver"``).
    """
    req = _request(gpus=gpus, memory=memory, bandwidth=bandwidth, algo=algo,
                   weight_copies=weight_copies, activation_model=activation_model,
                   headroom=headroom, temporaries=temporaries, checkpoint=checkpoint,
                   replan=replan, time_limit_s=time_limit_s)
    if microbatches is not None and (isinstance(microbatches, bool)
                                     or not isinstance(microbatches, int) or microbatches < 1):
        raise PlanError(f"microbatches must be a positive integer (got {microbatches!r})")
    if microbatches is not None:
        req["microbatches"] = microbatches
    if not isinstance(require_solver, bool):
        raise ArgumentTypeError(f"require_solver must be True or False "
                                f"(got {arguments.typed(require_solver)})")
    if require_solver:
        req["require_solver"] = True
    # One crossing: Go reads the source, plans (recording a stored run's plan) and answers
    # with the plan, its stored id and each layer's weights when the chain is the measured
    # model's (a chain file may describe another model than the one run: none to check).
    doc = _bind.pipeline(envelope(source, "pipeline_plan"), req)
    weights = doc.get("layer_param_bytes")
    return _read(doc, plan_id=doc.get("plan_id"), run_id=doc.get("run_id"),
                 layer_param_bytes=None if weights is None else tuple(weights))


def _read(doc: dict[str, Any], **kwargs: Any) -> PipelinePlan:
    """The plan of a ``pybind.Pipeline`` answer, with the planner's notes; warns when
    the planner fell back."""
    plan = PipelinePlan.from_dict(doc["plan"], notes=tuple(doc.get("notes") or ()), **kwargs)
    if plan.fallback:
        why = " ".join(plan.notes) or f"fallback {plan.fallback!r}"
        warnings.warn(f"pipeline_plan(algo={plan.algo!r}) returned a fallback plan, the best "
                      f"contiguous one (period {format_seconds(plan.period)}), not its own: "
                      f"{why}; pass require_solver=True to make this an error",
                      MissingSolverWarning, stacklevel=3)
    return plan


def load_plan(plan_id: int) -> PipelinePlan:
    """The stored pipeline plan ``plan_id``, as :func:`pipeline_plan` returned it (the same
    as :meth:`PipelinePlan.load <chainplan.pipeline.plan.PipelinePlan.load>`).

    Raises:
        ArgumentTypeError: ``plan_id`` is not an integer.
        NotFoundError: no such plan.
        ScheduleError: the plan is not a pipeline plan.
    """
    return PipelinePlan.load(plan_id)
