"""What a ``chainplan.Checkpointed`` view holds: its options, and a plan and an executor
per kind of input, made at the first forward of each (docs/executors.md).

Apart from :mod:`chainplan.checkpointed`, the public constructor and its documentation: this
module decides per kind of input whether a stored profile is reused, scaled to a new batch,
or measured, plans it (agreed by the data-parallel group) and builds its executor. Its
decisions are logged under ``chainplan.checkpointed``, the constructor's logger.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import warnings
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from chainplan import _bind
from chainplan.agreed import Offer, agree, data_parallel_group
from chainplan.api import Budget, LossFn, budget_request, plan_from
from chainplan.arguments import bandwidth_or_auto
from chainplan.callkind import (
    Target,
    call_chain_input,
    call_key,
    check_loss,
    describe_key,
    towers_may_be_stored,
)
from chainplan.errors import InfeasibleBudget, ProfileError
from chainplan.executors import wrap
from chainplan.executors.view import Planned, planned
from chainplan.profiler.filename import check_profile_name
from chainplan.profiler.labels import compute_dtype
from chainplan.profiler.run import default_profile_dir, profile_model
from chainplan.profiler.signature import model_signature
from chainplan.reuse import (
    chain_loss_label,
    choose,
    stored_runs,
    write_scaled_chain,
)
from chainplan.schedule import Plan
from chainplan.sequential import flatten_stages
from chainplan.shapecheck import ShapeWarning
from chainplan.source import envelope
from chainplan.towers.profile import TowersProfile

__all__ = ["CheckpointedPlans"]

_log = logging.getLogger("chainplan.checkpointed")


class CheckpointedPlans(Planned):
    """What a :class:`Checkpointed` view holds: its options, and a plan and executor per
    kind of input (the options are :class:`Checkpointed`'s keyword arguments).

    Attributes:
        plans: the plans made so far, one per kind of input, in the order they came.
    """

    def __init__(self, model: nn.Module, *, budget: Budget, algo: str | None,
                 bandwidth: float | str | None, loss_fn: LossFn | None,
                 target: Target | None, name: str | None, slots: int | None, reuse: bool,
                 rescale: bool, repeats: int, warmup: int, keep_logits: bool = False,
                 group: Any = None) -> None:
        super().__init__(model)
        if isinstance(model, nn.Sequential):
            flatten_stages(model)  # an empty chain: say so now, not at the first forward
        request = budget_request(budget, algo or "rotor", slots, 0,
                                 bandwidth=bandwidth is not None)
        auto = isinstance(bandwidth, str) and bandwidth.strip().lower() == "auto"
        if bandwidth is not None and not auto:  # "auto" is measured with the first profile
            request["bandwidth"] = bandwidth_or_auto(bandwidth, None)
        check_loss(loss_fn, target, model)
        for option, value, least in (("repeats", repeats, 1), ("warmup", warmup, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ProfileError(f"{option} must be an integer ≥ {least} (got {value!r})")
        self.loss_fn, self.target = loss_fn, target
        self.name = check_profile_name(name, default_from=model)  # now, not at the first call
        self.budget, self.algo, self.slots = budget, algo, slots
        self.bandwidth = "auto" if auto else request.get("bandwidth")
        self._bandwidth_given = bandwidth
        self.reuse, self.rescale = reuse, rescale
        self.repeats, self.warmup = repeats, warmup
        if not isinstance(keep_logits, bool):
            raise ProfileError(f"keep_logits must be True or False (got {keep_logits!r})")
        self.keep_logits = keep_logits
        self.group = group
        self._budget_bytes: int | None = request.get("budget_bytes")  # None: "min"
        self._cache: dict[tuple[Any, ...], Planned] = {}  # the wraps, by call_key
        self._plans: dict[tuple[Any, ...], Plan] = {}

    @property
    def plans(self) -> list[Plan]:
        """The plans made so far, one per kind of input, in the order they came."""
        return list(self._plans.values())

    def run(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        wrapped = self._cache.get(call_key(self.model, args, kwargs))
        if wrapped is None:
            wrapped = self.wrapped(*args, **kwargs)
        return wrapped.run(args, kwargs)

    def plan_for(self, *args: Any, **kwargs: Any) -> Plan | None:
        return self._plans.get(call_key(self.model, args, kwargs))

    def ensure_plan_for(self, *args: Any, **kwargs: Any) -> Plan | None:
        self.wrapped(*args, **kwargs)  # its plan for this call, made now if new
        return self.plan_for(*args, **kwargs)

    def rewrap(self, model: nn.Module) -> CheckpointedPlans:
        return CheckpointedPlans(model, budget=self.budget, algo=self.algo,
                                 bandwidth=self._bandwidth_given, loss_fn=self.loss_fn,
                                 target=self.target, name=self.name, slots=self.slots,
                                 reuse=self.reuse, rescale=self.rescale, repeats=self.repeats,
                                 warmup=self.warmup, keep_logits=self.keep_logits,
                                 group=self.group)

    def executor(self, *args: Any, **kwargs: Any) -> Any:
        """The executor of calls like this one (planned now if new): the
        ``CheckpointedChain`` of a Sequential, the ``(split, executor)`` pair of a model
        split from its graph."""
        return self.wrapped(*args, **kwargs).executor(*args, **kwargs)  # type: ignore[attr-defined]

    def wrapped(self, *args: Any, **kwargs: Any) -> Planned:
        """The plan's wrap for calls like this one: cached, else planned now (see
        :class:`Checkpointed`)."""
        key = call_key(self.model, args, kwargs)
        found = self._cache.get(key)
        if found is not None:
            return found
        x = call_chain_input(self.model, args, kwargs)
        if x.dim() == 0:
            raise ProfileError("Checkpointed needs a batched input (dimension 0 is the batch; "
                               "got a 0-dimensional tensor)")
        shape = tuple(int(d) for d in x.shape)
        p, how = self._plan_for(x, shape, args, kwargs)
        # Run as profiled: a stored run or a scaled chain file may not say how.
        p = dataclasses.replace(p, keep_logits=self.keep_logits)
        state = planned(wrap(p, self.model))
        assert state is not None
        msg = (f"Checkpointed({self.name}): input {describe_key(key)}: {how}; {p.algo} plan, "
               f"predicted peak {p.peak_bytes / 2**20:.1f} MiB for a budget of "
               f"{p.budget_bytes / 2**20:.1f} MiB")
        _log.info(msg)
        if self._cache:
            before = "; ".join(describe_key(k) for k in self._cache)
            # Callers: wrapped, run, the view's forward, Module._call_impl,
            # Module._wrapped_call_impl.
            warnings.warn(f"{msg} (a new kind of input: planned before for {before})",
                          ShapeWarning, stacklevel=6)
        self._cache[key], self._plans[key] = state, p
        return state

    def _plan_for(self, x: torch.Tensor, shape: tuple[int, ...], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[Plan, str]:
        """A plan for calls like ``(*args, **kwargs)``, and how its profile was found: this
        rank's own, or its data-parallel group's (:mod:`chainplan.agreed`)."""
        group = data_parallel_group(self.model, self.group, f"Checkpointed({self.name})")
        if group is None:
            source, how, bandwidth = self._source_for(x, shape, args, kwargs)
            p = self._plan(source, shape, bandwidth)
            return (p if p.input_shape is not None
                    else dataclasses.replace(p, input_shape=shape)), how

        def local() -> tuple[Offer, Any, str]:
            source, how, bandwidth = self._source_for(x, shape, args, kwargs)
            if bandwidth == "auto":
                bandwidth = bandwidth_or_auto("auto", source)
            chain = (None if isinstance(source, TowersProfile)
                     else json.loads(_bind.chain(envelope(source, "Checkpointed"))))
            options = (self.algo, self.slots, self.keep_logits, bandwidth is None)
            return (Offer(chain=chain, budget=self._budget_bytes, options=options, shape=shape,
                          bandwidth=None if bandwidth is None else float(bandwidth)),
                    source, how)

        ranks = dist.get_world_size(group)
        p, how = agree(group, f"Checkpointed({self.name}) at input shape {list(shape)}", local,
                       lambda src, budget, bw: self._plan(src, shape, bw, budget),
                       default_profile_dir() / "agreed")
        return dataclasses.replace(p, input_shape=shape), (
            f"{how}; planned by rank 0 of the data-parallel group of {ranks} ranks on the "
            "most of each stage's time and memory over the ranks, within their smallest "
            "budget")

    def _source_for(self, x: torch.Tensor, shape: tuple[int, ...], args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> tuple[Any, str, float | str | None]:
        """What to plan calls like ``(*args, **kwargs)`` on (a profile, a stored run, a
        scaled chain file), how it was found, and the bandwidth to plan with."""
        run, scaled = None, False
        label = (chain_loss_label(self.model, self.loss_fn, args, kwargs,
                                  keep_logits=self.keep_logits) if self.reuse else None)
        if label is not None:  # one chain: its stored runs (towers: profile_model's lookup)
            runs = stored_runs(signature=model_signature(self.model, x.device),
                               dtype=compute_dtype(self.model, x), device=str(x.device),
                               torch_version=torch.__version__, loss=label)
            run, scaled = choose(runs, shape, rescale=self.rescale)
        if run is None:
            prof = profile_model(self.model, *args, loss_fn=self.loss_fn,
                                 target=self._sample_target(x), repeats=self.repeats,
                                 warmup=self.warmup, name=self.name, keep_logits=self.keep_logits,
                                 reuse=self.reuse and towers_may_be_stored(self.model), **kwargs)
            how = ("reused the stored profile of the same call" if prof.reused
                   else "profiled anew")
            return prof, f"{how} (run {prof.run_id})", self.bandwidth
        if not scaled:
            return run.run_id, f"reused the stored profile (run {run.run_id})", self.bandwidth
        path = write_scaled_chain(run, shape[0], default_profile_dir() / "scaled")
        bandwidth = self.bandwidth
        if bandwidth == "auto":  # a chain file has no run to record a measurement with
            bandwidth = bandwidth_or_auto("auto", run.run_id)
        return path, (f"planned from the stored profile of run {run.run_id} (input shape "
                      f"{list(run.input_shape)}) scaled to batch {shape[0]}, an estimate "
                      f"(sizes and times × {shape[0] / run.batch:g}; chain file {path})"), \
            bandwidth

    def _plan(self, source: Any, shape: tuple[int, ...],
              bandwidth: float | str | None = None, budget: Budget | None = None) -> Plan:
        try:
            return plan_from(source, budget=self.budget if budget is None else budget,
                             algo=self.algo, slots=self.slots,
                         bandwidth=bandwidth if bandwidth is not None else self.bandwidth,
                         origin="checkpointed")
        except InfeasibleBudget as e:
            raise InfeasibleBudget(f"Checkpointed({self.name}) at input shape {list(shape)}: "
                                   f"{e}", min_budget_bytes=e.min_budget_bytes) from e

    def _sample_target(self, x: torch.Tensor) -> torch.Tensor | None:
        """The target to profile the loss with for inputs like ``x``."""
        t = self.target
        if t is None:
            return None
        if not isinstance(t, torch.Tensor):
            return t(x)
        t = t.to(x.device)
        if t.dim() == 0 or t.shape[0] == x.shape[0]:
            return t
        # Repeat or drop rows: every row stays a valid target (class labels, token ids).
        rows = torch.arange(x.shape[0], device=t.device) % t.shape[0]
        return t.index_select(0, rows)
