"""Asking the Go pipeline planners for a plan, and reading stored ones back.

:func:`pipeline_plan` calls ``planner/contiguous``, ``planner/pipedream`` or
``planner/madpipe`` in-process (through ``pybind.PipelineSolve*``, which go through the same
service as ``chainplan pipeline``) and returns a typed
:class:`~chainplan.pipeline.plan.PipelinePlan`; plans of a stored profile are recorded in
the database like every plan. :func:`load_plan` reads one back by its id.

This module never imports torch.
"""

from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from chainplan import _bind
from chainplan.errors import (
    ArgumentTypeError,
    MissingSolverWarning,
    NotFoundError,
    PlanError,
    ScheduleError,
)
from chainplan.pipeline.plan import PipelinePlan

if TYPE_CHECKING:
    from chainplan.profiler.run import Profile

__all__ = ["load_plan", "pipeline_plan"]

_ALGOS = ("madpipe", "contiguous", "pipedream")
_MODELS = ("saved", "input")


def _typed(value: object) -> str:
    return f"{value!r} ({type(value).__name__})"


def _request(*, gpus: int, memory: int | str, bandwidth: float | str, algo: str,
             weight_copies: int, activation_model: str,
             time_limit_s: float | None) -> dict[str, Any]:
    """The planning request, each argument checked before any work (names the argument)."""
    if not isinstance(algo, str):
        raise ArgumentTypeError(f"algo must be a str such as 'madpipe' (got {_typed(algo)})")
    if algo not in _ALGOS:
        raise PlanError(f"unknown pipeline algorithm {algo!r} (want {', '.join(_ALGOS)})")
    for name, value in (("gpus", gpus), ("weight_copies", weight_copies)):
        if isinstance(value, bool) or not isinstance(value, int):
            raise ArgumentTypeError(f"{name} must be an integer (got {_typed(value)})")
        if value < 1:
            raise PlanError(f"{name} must be at least 1 (got {value})")
    if activation_model not in _MODELS:
        raise PlanError(f"activation_model must be 'saved' or 'input' (got {activation_model!r})")
    req: dict[str, Any] = {"algo": algo, "gpus": gpus, "weight_copies": weight_copies,
                           "activation_model": activation_model}
    if isinstance(memory, str) and memory.strip().lower() == "min":
        req["min_memory"] = True
    elif isinstance(memory, str):
        req["memory_bytes"] = _bind.parse_bytes(memory)
    elif isinstance(memory, bool) or not isinstance(memory, int):
        raise ArgumentTypeError(f"memory must be an int (bytes per device), a size string such "
                                f"as '16GiB', or 'min' (got {_typed(memory)})")
    elif memory <= 0:
        raise PlanError(f"memory must be positive (got {memory} bytes)")
    else:
        req["memory_bytes"] = memory
    if isinstance(bandwidth, str):
        req["bandwidth"] = _bind.parse_bandwidth(bandwidth)
    elif isinstance(bandwidth, bool) or not isinstance(bandwidth, int | float):
        raise ArgumentTypeError(f"bandwidth must be bytes per second (an int or a float) or a "
                                f"string such as '12GB/s' (got {_typed(bandwidth)})")
    elif not (math.isfinite(bandwidth) and bandwidth > 0):
        raise PlanError(f"bandwidth must be a positive, finite number of bytes per second "
                        f"(got {bandwidth!r})")
    else:
        req["bandwidth"] = float(bandwidth)
    if time_limit_s is not None:
        if isinstance(time_limit_s, bool) or not isinstance(time_limit_s, int | float) \
                or not time_limit_s > 0:
            raise PlanError(f"time_limit_s must be a positive number of seconds "
                            f"(got {time_limit_s!r})")
        req["time_limit_s"] = float(time_limit_s)
    return req


def _param_bytes(chain_json: str) -> tuple[int, ...]:
    return tuple(int(s.get("param_bytes", 0)) for s in json.loads(chain_json)["stages"])


def pipeline_plan(source: Profile | int | str | os.PathLike[str], *, gpus: int,
                  memory: int | str, bandwidth: float | str, algo: str = "madpipe",
                  weight_copies: int = 2, microbatches: int | None = None,
                  activation_model: str = "saved",
                  time_limit_s: float | None = None,
                  require_solver: bool = False) -> PipelinePlan:
    """Plan a pipeline with the Go planner, in-process.

    Profile the model at the micro-batch size (the batch one optimizer step splits into
    ``microbatches``): the planner's mini-batch, one per period, is the executor's
    micro-batch.

    Args:
        source: a :class:`~chainplan.profiler.run.Profile`, a stored run id, or a chain file
            (``chainplan.chain/v1`` JSON).

    Keyword Args:
        gpus: P, the devices (ranks) to plan for.
        memory: the memory of each device: bytes (an int), a size such as ``"16GiB"`` (the
            CLI's rule, docs/CLI.md), or ``"min"`` for the algorithm's smallest.
        bandwidth: the bandwidth of each link between two devices: bytes per second, or a
            string such as ``"12GB/s"``.
        algo: ``madpipe`` (default: one device may hold several stages), ``contiguous``
            (the best allocation with one stage per device) or ``pipedream``.
        weight_copies: copies of the weights per device (default: 2, weights and gradients:
            the synchronous executor's). Optimizer state is not counted: add a copy per
            buffer the optimizer keeps per weight (3 for SGD with momentum, 4 for Adam).
        microbatches: micro-batches per optimizer step, kept with the plan for its runner
            (default: None, the runner's ``microbatches=`` then).
        activation_model: ``saved`` (default: stage input plus what the layers saved, as
            measured) or ``input`` (the layers' inputs, the paper's model).
        time_limit_s: madpipe's scheduling time limit (seconds; default: the planner's).
        require_solver: raise :class:`~chainplan.errors.MissingSolverError` when madpipe's
            MILP solver is missing, instead of returning the best contiguous plan with a
            :class:`~chainplan.errors.MissingSolverWarning` (default: False). The solver is
            the HiGHS program of the ``highsbox`` package (a dependency of chainplan), or
            the program ``$CHAINPLAN_HIGHS`` names; the other algorithms run none.

    Returns:
        The :class:`~chainplan.pipeline.plan.PipelinePlan`; plans of stored runs are
        recorded in the database (``plan.plan_id``) and know the weights of each layer, which
        the runner checks the model against.

    Raises:
        InfeasibleBudget: the memory is too small (``min_budget_bytes`` says how small it
            may be, when the planner knows).
        PlanError: a bad algorithm, size or option; ArgumentTypeError a wrong type.
        NotFoundError: no such stored run, or ``source`` names no file.
        MissingSolverError: ``require_solver`` and no MILP solver was found.

    Warns:
        MissingSolverWarning: madpipe found no MILP solver and fell back to the best
            contiguous plan (``plan.fallback == "no-milp-solver"``).
    """
    req = _request(gpus=gpus, memory=memory, bandwidth=bandwidth, algo=algo,
                   weight_copies=weight_copies, activation_model=activation_model,
                   time_limit_s=time_limit_s)
    if microbatches is not None and (isinstance(microbatches, bool)
                                     or not isinstance(microbatches, int) or microbatches < 1):
        raise PlanError(f"microbatches must be a positive integer (got {microbatches!r})")
    if microbatches is not None:
        req["microbatches"] = microbatches
    if not isinstance(require_solver, bool):
        raise ArgumentTypeError(f"require_solver must be True or False "
                                f"(got {_typed(require_solver)})")
    if require_solver:
        req["require_solver"] = True
    if hasattr(source, "run_id") and hasattr(source, "path"):  # a Profile (needs torch)
        if source.run_id is None:
            chain = _bind.profile_chain(str(source.path))
            return _read(json.loads(_bind.pipeline_solve(chain, req)),
                         layer_param_bytes=_param_bytes(chain))
        source = int(source.run_id)
    if isinstance(source, int) and not isinstance(source, bool):
        doc = json.loads(_bind.pipeline_solve_run(source, req))
        return _read(doc, plan_id=int(doc["plan_id"]), run_id=source,
                     layer_param_bytes=_param_bytes(_bind.export_chain(source)))
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        try:
            chain = path.read_text()
        except FileNotFoundError as err:
            raise NotFoundError(f"pipeline_plan() source {str(source)!r} is not an existing "
                                f"chain file (nor a Profile or a run id)") from err
        # A chain file may describe another model than the one run: no weights to check.
        return _read(json.loads(_bind.pipeline_solve(chain, req)))
    raise PlanError(f"pipeline_plan() takes a Profile, a run id or a chain file "
                    f"(got {type(source).__name__})")


def _read(doc: dict[str, Any], **kwargs: Any) -> PipelinePlan:
    """The plan of a ``pybind.PipelineSolve*`` answer, with the planner's notes; warns when
    the planner fell back."""
    plan = PipelinePlan.from_dict(doc["plan"], notes=tuple(doc.get("notes") or ()), **kwargs)
    if plan.fallback:
        why = " ".join(plan.notes) or f"fallback {plan.fallback!r}"
        warnings.warn(f"pipeline_plan(algo={plan.algo!r}) returned a fallback plan, the best "
                      f"contiguous one (period {plan.period:.6g}), not its own: {why}; pass "
                      f"require_solver=True to make this an error",
                      MissingSolverWarning, stacklevel=3)
    return plan


def load_plan(plan_id: int) -> PipelinePlan:
    """The stored pipeline plan ``plan_id``, as :func:`pipeline_plan` returned it.

    Raises:
        NotFoundError: no such plan.
        ScheduleError: the plan is not a pipeline plan.
    """
    if isinstance(plan_id, bool) or not isinstance(plan_id, int):
        raise ArgumentTypeError(f"plan_id must be an integer (got {_typed(plan_id)})")
    stored = _bind.plan_document(plan_id)  # NotFoundError for a missing plan
    doc = stored["plan"] or {}
    if doc.get("format") != "chainplan.pipeline/v1":
        raise ScheduleError(f"plan {plan_id} is a {doc.get('algo', '?')} plan, not a pipeline "
                            f"plan")
    run_id = int(stored["run_id"])
    return PipelinePlan.from_dict(doc, plan_id=plan_id, run_id=run_id,
                                  layer_param_bytes=_param_bytes(_bind.export_chain(run_id)))
