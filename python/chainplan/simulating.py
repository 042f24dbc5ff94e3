"""Simulating pipeline schedules with the Go simulator, in-process.

:func:`pipesim` calls ``planner/pipesim`` through ``pybind.Pipesim*``, the service
``chainplan pipesim`` uses, and returns a typed
:class:`~chainplan.simulation.Simulation`; simulations of a stored profile or plan are
recorded in the database (tables ``simulations`` and ``simulation_stages``, docs/sql.md).
docs/pipesim.md has the model and the schedules.

This module never imports torch.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from chainplan import _bind, arguments
from chainplan.arguments import typed
from chainplan.errors import ArgumentTypeError, PlanError
from chainplan.pipeline.plan import PipelinePlan
from chainplan.profiler.document import Profile
from chainplan.simulation import Simulation
from chainplan.source import envelope, run_id_of
from chainplan.svg import write_svg

__all__ = ["pipesim"]

_MODELS = ("saved", "input")

StagesSpec = int | str | Sequence[tuple[int, int]]


def _count(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an integer (got {typed(value)})")
    if value < low:
        raise PlanError(f"{name} must be at least {low} (got {value})")
    return value


def _stages(stages: StagesSpec) -> str:
    """A stage specification as the Go side reads it: a count or layer ranges."""
    if isinstance(stages, bool):
        raise ArgumentTypeError(f"stages must be a count, a string such as '1-4,5-8' or a list "
                                f"of (first, last) layer pairs (got {typed(stages)})")
    if isinstance(stages, int):
        return str(_count("stages", stages, 1))
    if isinstance(stages, str):
        return stages
    if isinstance(stages, Sequence):
        parts = []
        for i, pair in enumerate(stages):
            if not (isinstance(pair, Sequence) and len(pair) == 2
                    and all(isinstance(x, int) and not isinstance(x, bool) for x in pair)):
                raise ArgumentTypeError(f"stages[{i}] must be a (first, last) pair of layer "
                                        f"numbers (got {typed(pair)})")
            parts.append(f"{pair[0]}-{pair[1]}")
        return ",".join(parts)
    raise ArgumentTypeError(f"stages must be a count, a string such as '1-4,5-8' or a list of "
                            f"(first, last) layer pairs (got {typed(stages)})")


def _request(*, schedule: str, microbatches: int, minibatches: int | None,
             stages: StagesSpec | None,
             unit_time: bool, bandwidth: float | str | None, alpha_s: float,
             weight_copies: int | None, activation_model: str | None, memory: int | str | None,
             checkpoint: Sequence[int] | str, max_inflight: int, flush: bool,
             plot_minibatches: int | None) -> dict[str, Any]:
    """The request, each argument checked before any work (the message names it)."""
    if not isinstance(schedule, str):
        raise ArgumentTypeError(f"schedule must be a str such as '1f1b-flush' "
                                f"(got {typed(schedule)})")
    req: dict[str, Any] = {"schedule": schedule,
                           "microbatches": _count("microbatches", microbatches, 1),
                           "max_inflight": _count("max_inflight", max_inflight, 0),
                           "unit_time": bool(unit_time), "flush": bool(flush)}
    # Unset counts are left to the Go side's defaults (pipesim.DefaultMinibatches, the
    # picture's plot.DefaultPeriods), so that there is one default of each.
    if minibatches is not None:
        req["minibatches"] = _count("minibatches", minibatches, 1)
    if plot_minibatches is not None:
        req["plot_minibatches"] = _count("plot_minibatches", plot_minibatches, 1)
    if stages is not None:
        req["stages"] = _stages(stages)
    if bandwidth is not None:
        req["bandwidth"] = arguments.bandwidth(bandwidth)
    if isinstance(alpha_s, bool) or not isinstance(alpha_s, int | float) \
            or not (math.isfinite(alpha_s) and alpha_s >= 0):
        raise PlanError(f"alpha_s must be a latency ≥ 0 in seconds (got {alpha_s!r})")
    req["alpha_s"] = float(alpha_s)
    if weight_copies is not None:
        req["weight_copies"] = _count("weight_copies", weight_copies, 1)
    if activation_model is not None:
        if activation_model not in _MODELS:
            raise PlanError(f"activation_model must be 'saved' or 'input' "
                            f"(got {activation_model!r})")
        req["activation_model"] = activation_model
    if memory is not None:
        if isinstance(memory, str):
            req["memory_bytes"] = _bind.parse_bytes(memory)
        else:
            req["memory_bytes"] = _count("memory", memory, 1)
    if checkpoint == "all":
        req["checkpoint_all"] = True
    elif isinstance(checkpoint, str) or not isinstance(checkpoint, Sequence):
        raise ArgumentTypeError(f"checkpoint must be stage indices or 'all' "
                                f"(got {typed(checkpoint)})")
    else:
        req["checkpoint"] = [_count(f"checkpoint[{i}]", k, 0) for i, k in enumerate(checkpoint)]
    return req


def pipesim(source: Profile | int | str | os.PathLike[str] | None = None, *, schedule: str,
            microbatches: int, stages: StagesSpec | None = None, plan: PipelinePlan | None = None,
            minibatches: int | None = None, unit_time: bool = False,
            bandwidth: float | str | None = None,
            alpha_s: float = 0.0, weight_copies: int | None = None,
            activation_model: str | None = None, memory: int | str | None = None,
            checkpoint: Sequence[int] | str = (), max_inflight: int = 0, flush: bool = False,
            trace: bool | str | os.PathLike[str] = False,
            plot: bool | str | os.PathLike[str] = False,
            plot_minibatches: int | None = None) -> Simulation:
    """Simulate a pipeline schedule, event by event, as ``chainplan pipesim`` does.

    Usage::

        sim = chainplan.pipeline.pipesim(prof, schedule="1f1b-flush", stages=4, microbatches=8,
                                         bandwidth="12GB/s", trace="trace.json", plot="gantt.svg")
        print(sim.period, sim.per_stage[0].steady_bubble, sim.peak_bytes)
        chainplan.pipeline.pipesim(prof, schedule="periodic", plan=pp, microbatches=8, flush=True)

    Args:
        source: a :class:`~chainplan.profiler.run.Profile`, a stored run id, or a chain file
            (``chainplan.chain/v1``); None with a stored ``plan`` (its run's chain).

    Keyword Args:
        schedule: ``gpipe``, ``1f1b-flush``, ``pipedream-async``, ``2bw``, ``timeprest`` or
            ``periodic`` (replays ``plan``).
        microbatches: N, micro-batches per mini-batch (profile at the micro-batch size).
        stages: a stage count (balanced partition), a string of layer ranges
            (``"1-4,5-9"``) or a list of ``(first, last)`` layer pairs (1-based); or give
            ``plan`` instead.
        plan: a :class:`~chainplan.pipeline.plan.PipelinePlan`: replayed by ``periodic``,
            its partition used by the other schedules, its model (bandwidth, weight copies,
            activation model, memory) the simulation's.
        minibatches: K, mini-batches simulated (default: the simulator's, 16).
        unit_time: every task lasts one time point, transfers none (the papers' figures).
        bandwidth: links of this many bytes per second, or a string such as ``"12GB/s"``
            (default: transfers are free).
        alpha_s: latency of each transfer (seconds; needs ``bandwidth``).
        weight_copies: copies of the weights per device (default: 2, weights and gradients;
            add the optimizer's).
        activation_model: ``saved`` (default) or ``input``.
        memory: memory per device to check the peaks against: bytes or a size string.
        checkpoint: stages (0-based) that recompute their forward before their backward, or
            ``"all"``.
        max_inflight: TiMePReSt's cap on mini-batches in flight (0: none).
        flush: ``periodic`` only: a flush per mini-batch, as the pipeline runner does.
        trace: True to keep the Chrome trace (``Simulation.trace``), or a path to write it.
        plot: True to keep the Gantt picture (``Simulation.svg``), or a ``.svg`` path.
        plot_minibatches: the mini-batches the picture shows (default: the picture's, 3).

    Returns:
        The :class:`~chainplan.simulation.Simulation`; one of a stored run or plan is
        recorded (``simulation_id``) and carries the runner's stored measurements of that
        plan beside it (``comparisons``).

    Raises:
        PlanError: a bad schedule, stage specification, count or option.
        ScheduleError: a plan that does not fit the chain.
        NotFoundError: no such run, plan or chain file.
        ArgumentTypeError: an argument of the wrong type.
    """
    req = _request(schedule=schedule, microbatches=microbatches, minibatches=minibatches,
                   stages=stages, unit_time=unit_time, bandwidth=bandwidth, alpha_s=alpha_s,
                   weight_copies=weight_copies, activation_model=activation_model, memory=memory,
                   checkpoint=checkpoint, max_inflight=max_inflight, flush=flush,
                   plot_minibatches=plot_minibatches)
    req["trace"], req["svg"] = trace is not False, plot is not False
    if plot is not False and plot is not True and Path(plot).suffix.lower() != ".svg":
        raise PlanError(f"plot {str(plot)!r}: pictures from Python are SVG; name a .svg file "
                        f"(for PNG use chainplan pipesim ... --plot FILE.png)")
    sim = Simulation.from_dict(json.loads(_call(source, plan, req)))
    if trace is not False and trace is not True:
        sim.write_trace(trace)
    if plot is not False and plot is not True and sim.svg is not None:
        write_svg(plot, sim.svg)
    return sim


def _call(source: object, plan: PipelinePlan | None, req: dict[str, Any]) -> str:
    """One crossing into Go: a chain (nothing stored) or a stored run or plan (recorded)."""
    if plan is not None:
        if not (hasattr(plan, "to_json") and hasattr(plan, "plan_id")):
            raise ArgumentTypeError(f"plan must be a PipelinePlan (got {typed(plan)})")
        if plan.plan_id is not None and (source is None
                                         or run_id_of(source, "pipesim()") is not None):
            req["plan_id"] = plan.plan_id  # a stored plan: its run's chain, recorded
        else:
            req["plan"] = json.loads(plan.to_json())
    if source is None and "plan_id" not in req:
        raise PlanError("pipesim() needs a source (a Profile, a run id or a chain file), or a "
                        "stored plan")
    # A stored plan alone is simulated on its run: the source is then the database only.
    src = _bind.database() if source is None else envelope(source, "pipesim")
    return _bind.pipesim(src, req)
