"""profile, plan, record, measure: the entry points of a training script."""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from chainplan import _bind
from chainplan.algorithms import check_algorithm
from chainplan.arguments import bandwidth_or_auto as _bandwidth  # plan()'s name for it
from chainplan.errors import ArgumentTypeError, PlanError, ProfileError
from chainplan.executors.view import planned
from chainplan.plandoc import PlanDocument
from chainplan.profiler.hooks import record_model
from chainplan.profiler.lossmeasure import own_loss
from chainplan.profiler.memory import MemoryProbe
from chainplan.profiler.run import Profile, profile_model
from chainplan.profiler.sizes import held_nbytes
from chainplan.schedule import Plan
from chainplan.source import envelope

__all__ = ["profile", "plan", "record", "measure", "Execution"]

Budget = int | str
LossFn = Callable[..., torch.Tensor]

profile = profile_model
record = record_model


def budget_request(budget: Budget, algo: str | None, slots: int | None, segments: int, *,
                   bandwidth: bool = False, read_sizes: bool = True) -> dict[str, Any]:
    """The planning request for a budget, checked before any work: a wrong type raises
    :class:`ArgumentTypeError` naming the argument, a bad value :class:`PlanError`. The
    algorithm, its segments and whether it is given a ``bandwidth`` are checked against
    the planner's registry (:func:`chainplan.algorithms.check_algorithm`); ``algo=None``
    asks for the input's default algorithm, which the Go planner chooses and checks.

    A budget is a positive int (bytes), a size string read by the Go parser with the CLI's
    rule (docs/CLI.md, "Sizes and bandwidths": ``"2GiB"``, ``"1e9"``), or ``"min"``. A float
    is refused, also a whole one: a string keeps its exact spelling where a float rounds.
    With ``read_sizes`` false a size string is sent as written (``"budget"``), read by Go
    in the planning call itself, one crossing fewer.
    """
    if algo is not None and not isinstance(algo, str):
        raise ArgumentTypeError(f"algo must be a str such as 'rotor' (got {_typed(algo)})")
    if isinstance(segments, bool) or not isinstance(segments, int):
        raise ArgumentTypeError(f"segments must be an integer (got {_typed(segments)})")
    if algo is not None:
        check_algorithm(algo, segments=segments, bandwidth=bandwidth)
    if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int)):
        raise ArgumentTypeError(f"slots must be a positive integer, or None for the "
                                f"algorithm's default (got {_typed(slots)})")
    if slots is not None and slots <= 0:
        raise PlanError(f"slots must be a positive integer, or None for the algorithm's default "
                        f"(got {slots!r})")
    # 0 asks the Go planner for the algorithm's own default grid.
    req: dict[str, Any] = {"algo": algo or "", "slots": slots or 0, "segments": segments}
    if isinstance(budget, str) and budget.strip().lower() == "min":
        req["min_budget"] = True
        return req
    if isinstance(budget, str) and not read_sizes:
        req["budget"] = budget
        return req
    if isinstance(budget, str):
        budget = _bind.parse_bytes(budget)
    elif isinstance(budget, bool) or not isinstance(budget, int):
        raise ArgumentTypeError(
            f"budget must be an int (bytes), a size string such as '2GiB' or '1e9', or 'min' "
            f"(got {_typed(budget)})")
    if budget <= 0:
        raise PlanError(f"budget must be positive (got {budget} bytes)")
    req["budget_bytes"] = budget
    return req


def _typed(value: object) -> str:
    """A value and its type for an error message: ``2.5 (float)``."""
    return f"{value!r} ({type(value).__name__})"


def plan(
    source: Profile | int | str | os.PathLike[str] | nn.Module,
    *,
    budget: Budget,
    algo: str | None = None,
    slots: int | None = None,
    segments: int = 0,
    bandwidth: float | str | None = None,
    sample: torch.Tensor | None = None,
    loss_fn: LossFn | None = None,
    target: torch.Tensor | None = None,
) -> Plan:
    """Compute a schedule with the Go planner, in-process.

    Args:
        source: a :class:`~chainplan.profiler.run.Profile`, a stored run id, a chain file
            (``chainplan.chain/v1`` JSON), a profile file (``chainplan.profile/v1`` Arrow
            IPC, the file ``chainplan.profile`` writes), or the model itself (then
            ``sample`` is required and the model is profiled first).

    Keyword Args:
        budget: total activation memory (chain input included): bytes (an int), a size
            such as ``"2GiB"``, ``"2GB"`` or ``"1.5e9"``, or ``"min"`` for the algorithm's
            smallest feasible budget. Sizes follow the CLI's rule (docs/CLI.md, "Sizes and
            bandwidths"): ``k``, ``M``, ``G``, ``T`` with or without ``B`` are powers of
            1000, ``Ki``, ``Mi``, ``Gi``, ``Ti`` powers of 1024, case-insensitive.
        algo: ``rotor``, ``rotor-ops``, ``optimal``, ``revolve``, ``sequential`` or
            ``store-all``, an offloading algorithm, or for a model of towers joined at the
            loss ``multichain`` (its default) or ``multichain-linear`` (docs/multichain.md);
            names are lower-case. Default for one chain: ``rotor-ops`` for a profile of a
            model captured from its graph (its stages have operation-level options:
            docs/rotor.md, "Which algorithm"), else ``rotor``.
        slots: memory slots of the discretization (default: the algorithm's own: 500 for
            the rematerialization algorithms and ``offload``, a grid sized to the chain's
            length for ``pofo``, 50 to 243 slots).
        segments: segment count for ``sequential`` (default: 0, the best that fits).
        bandwidth: host-device copy bandwidth for the offloading algorithms (``pofo``,
            ``offload``, ``greedy``, ``autocapper``, ``opportunist``): bytes per second (an
            int or a float), a size per second such as ``"12GB/s"`` or ``"1.2e10"`` (the
            budget's units, ``/s`` optional), or ``"auto"``: the bandwidth recorded with the
            run, else measured once on the profile's device and recorded.
        sample, loss_fn, target: used to profile ``source`` when it is a model.

    Returns:
        The :class:`~chainplan.schedule.Plan`; plans of stored runs are recorded in the
        database (``plan.plan_id``). Plans of a profile or a run know the input shape it
        was taken with (``plan.input_shape``).

    Raises:
        InfeasibleBudget: the budget is too small (``min_budget_bytes`` says how small it
            may be).
        PlanError: a bad algorithm name, size or option.
        ArgumentTypeError: an argument of the wrong type (``budget=2.5``, ``slots="10"``);
            also a :class:`TypeError` and a :class:`PlanError`.
        NotFoundError: no such stored run, or ``source`` is a string naming no file.
    """
    return plan_from(source, budget=budget, algo=algo, slots=slots, segments=segments,
                 bandwidth=bandwidth, sample=sample, loss_fn=loss_fn, target=target,
                 origin="python")


def plan_from(
    source: Profile | int | str | os.PathLike[str] | nn.Module,
    *,
    budget: Budget,
    origin: str,
    algo: str | None = None,
    slots: int | None = None,
    segments: int = 0,
    bandwidth: float | str | None = None,
    sample: torch.Tensor | None = None,
    loss_fn: LossFn | None = None,
    target: torch.Tensor | None = None,
) -> Plan:
    """:func:`plan`, recording ``origin`` (``"python"`` or ``"checkpointed"``) as the
    source of a stored run's plan (the ``source`` of its parameters, docs/sql.md)."""
    if isinstance(source, nn.Module):  # a model, not a source: profiled here first
        # Checked before the model is profiled: its default algorithm reads what rotor reads.
        budget_request(budget, algo or "rotor", slots, segments, bandwidth=bandwidth is not None,
                        read_sizes=False)
        if sample is None:
            raise ProfileError("plan(model, ...) profiles the model first and needs sample=")
        source = profile_model(source, sample, loss_fn=loss_fn, target=target)
    # One crossing: Go reads the sizes, chooses the default algorithm, checks the request,
    # plans (and records a stored run's plan) and answers with the whole planned document.
    req = budget_request(budget, algo, slots, segments, bandwidth=bandwidth is not None,
                          read_sizes=False)
    if bandwidth is not None:
        auto = isinstance(bandwidth, str) and bandwidth.strip().lower() == "auto"
        req["bandwidth"] = (bandwidth if isinstance(bandwidth, str) and not auto
                            else _bandwidth(bandwidth, source))
    # The source goes as its envelope (chainplan.source): Go reads the run or the file.
    # The origin is recorded with a stored run's plan; Go ignores it for the others.
    src = envelope(source, "plan")
    doc = _bind.plan(src, {**req, "source": origin})
    return Plan.from_json(doc["plan"], trusted=True, plan_id=doc.get("plan_id"),
                          run_id=doc.get("run_id"), input_shape=doc.get("input_shape"),
                          chain_json=doc.get("chain_json"), keep_logits=doc.get("keep_logits"),
                          source=src)


@dataclass(frozen=True)
class Execution:
    """A measured run of a plan.

    Attributes:
        step_time_s: median time of one training step (forward, loss, backward; seconds).
        peak_bytes: peak activation memory of a step (bytes, chain input included),
            measured by :class:`~chainplan.profiler.memory.MemoryProbe`.
        predicted_makespan_s: the plan's predicted step time (seconds).
        predicted_peak_bytes: the plan's predicted peak (bytes).
        execution_id: the row in the ``executions`` table, when recorded.
    """

    step_time_s: float
    peak_bytes: int
    predicted_makespan_s: float
    predicted_peak_bytes: int
    execution_id: int | None


def _loss(loss_fn: LossFn | None, out: Any, target: torch.Tensor | None, *,
          towers: bool = False) -> torch.Tensor:
    """The loss of one measured step: ``loss_fn`` on what the model returned (for towers
    joined at the loss, ``towers``, its outputs as separate arguments, as they were
    profiled); without it, the loss the model computed itself (a ``loss`` field), else the
    mean square of the returned tensor (of its first floating tensor, for a structure)."""
    if loss_fn is not None:
        parts = tuple(out) if towers and isinstance(out, (tuple, list)) else (out,)
        return loss_fn(*parts, target) if target is not None else loss_fn(*parts)
    own = own_loss(out)
    if own is not None:
        return own
    first = next((t for t in pytree.tree_leaves(out)
                  if isinstance(t, torch.Tensor) and t.is_floating_point()), None)
    if first is None:
        raise PlanError(f"measure() needs loss_fn= for a model returning {type(out).__name__}")
    return first.float().square().mean()


def _inputs_bytes(inputs: Any) -> int:
    """Bytes of the tensors in ``inputs`` (a nested structure), each storage counted once
    and whole (a view holds its base: :mod:`chainplan.profiler.sizes`)."""
    return held_nbytes(t for t in pytree.tree_leaves(inputs) if isinstance(t, torch.Tensor))


def measure(
    net: nn.Module,
    *args: Any,
    plan: PlanDocument | None = None,
    loss_fn: LossFn | None = None,
    target: torch.Tensor | None = None,
    steps: int = 3,
    store: bool = True,
    **kwargs: Any,
) -> Execution:
    """Run training steps of ``net`` and measure their time and peak activation memory.

    Weight gradients are allocated before measuring (they are not activations). The peak is
    taken over one step, relative to the memory before it, plus the inputs' bytes (the
    budget counts the chain input and side arguments such as a mask). The time is the
    median of ``steps`` further steps. Gradients accumulate into ``.grad``; zero them
    afterwards as usual.

    Args:
        net: the module to run, called as ``net(*args, **kwargs)`` (a wrapped model, or the
            plain model for a baseline).
        args, kwargs: the call; keyword arguments named like the options below must be
            positional.

    Keyword Args:
        plan: the plan ``net`` executes (default: the plan of a wrapped model for this
            call, :func:`chainplan.executors.planned`).
        loss_fn, target: the loss, called on what ``net`` returns (default: the loss the
            model computes itself when it returns one, as a HuggingFace model given
            ``labels=`` does, held with the model's output through the backward as a
            training loop does; else the mean square of the output). Under a plan of
            towers joined at the loss, a tuple of outputs is passed as separate arguments,
            ``loss_fn(*outputs[, target])``, as the profile called it.
        steps: timed steps, ≥ 1 (default: 3).
        store: record the execution in the database next to the plan (default: True).
    """
    if not isinstance(net, nn.Module):
        hint = (": pass the wrapped model, measure(plan.wrap(model), *args, ...)"
                if isinstance(net, PlanDocument) else "")
        raise ArgumentTypeError(f"measure() runs a module (net: {type(net).__name__}){hint}")
    if steps < 1:
        raise PlanError(f"steps must be at least 1 (got {steps})")
    tensors = [t for t in pytree.tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
    if not tensors:
        raise PlanError("measure() needs a call of the model with a tensor argument")
    device = tensors[0].device
    for p in net.parameters():
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    state = planned(net)
    if plan is None and state is not None:
        plan = state.ensure_plan_for(*args, **kwargs)
    towers = plan is not None and plan.multichain is not None

    def step() -> None:
        out = net(*args, **kwargs)
        if loss_fn is None and own_loss(out) is not None:
            loss = _loss(None, out, None)  # the output is held, as a training loop does
        else:
            loss = _loss(loss_fn, out, target, towers=towers)
            del out
        loss.backward()  # type: ignore[no-untyped-call]

    step()  # warm-up: caches, lazy allocations
    sync()
    with MemoryProbe(device=device) as probe:
        step()
        sync()
    peak = probe.peak_bytes + _inputs_bytes((args, kwargs))
    times = []
    for _ in range(steps):
        sync()
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    ex = Execution(step_time_s=statistics.median(times), peak_bytes=peak,
                   predicted_makespan_s=plan.makespan if plan else 0.0,
                   predicted_peak_bytes=plan.peak_bytes if plan else 0, execution_id=None)
    if store and plan is not None and plan.plan_id is not None:
        eid = _bind.record_execution(plan.plan_id, {
            "step_time_s": ex.step_time_s, "peak_bytes": ex.peak_bytes, "steps": steps,
            "device": str(device), "torch_version": torch.__version__})
        ex = Execution(ex.step_time_s, ex.peak_bytes, ex.predicted_makespan_s,
                       ex.predicted_peak_bytes, eid)
    return ex
