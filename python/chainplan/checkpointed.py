"""``chainplan.Checkpointed``: a chain model that profiles, plans and checkpoints itself.

It is the whole pipeline (profile, store, plan, execute) behind one ``nn.Module`` that drops
into an unchanged training loop. What it decides per input shape, and why:

* a stored profile of the same model (signature, compute dtype, device, torch version,
  loss) and input shape is reused, so a new process does not profile again;
* one that differs in the batch dimension only is scaled to the new batch
  (:mod:`chainplan.reuse`), an estimate that costs no measurement;
* otherwise the model is profiled on the input itself.

Each decision is logged (logger ``chainplan.checkpointed``), and a shape met after the
first also raises a :class:`~chainplan.shapecheck.ShapeWarning`: the memory figures of
the new plan are not those of the first.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from chainplan.api import Budget, LossFn, _bandwidth, _budget_request, _plan
from chainplan.errors import InfeasibleBudget, ProfileError
from chainplan.executors import wrap
from chainplan.graph.executor import adopt
from chainplan.profiler.run import compute_dtype, default_profile_dir, profile_model
from chainplan.profiler.signature import model_signature
from chainplan.reuse import choose, loss_name, stored_runs, write_scaled_chain
from chainplan.schedule import Plan
from chainplan.shapecheck import ShapeWarning
from chainplan.stages import flatten_stages

__all__ = ["Checkpointed"]

_log = logging.getLogger(__name__)

#: A sample target: an example batch, or a function making the target from the input.
Target = torch.Tensor | Callable[[torch.Tensor], torch.Tensor]

class Checkpointed(nn.Module):
    """A chain model that profiles, plans and checkpoints itself within a memory budget.

    Wrap the model once and train as usual: ``net(x)`` returns the chain output, and the
    training script computes the loss on it::

        net = chainplan.Checkpointed(model, budget="2GiB", loss_fn=F.cross_entropy,
                                     target=y0)   # an example target batch
        opt = torch.optim.AdamW(net.parameters())
        for x, y in loader:
            loss = F.cross_entropy(net(x), y)
            loss.backward()
            opt.step()
            opt.zero_grad()

    The first forward with an input shape (and dtype, device, autocast state) finds or
    makes a profile for it, plans, and caches the executor; later forwards with that shape
    cost a dictionary lookup. A profile is found in the database when a stored run has the
    same model signature (module tree, parameter and buffer names, shapes and dtypes,
    device, torch version), compute dtype, loss and input shape: it is reused, so a new
    process does not profile again. A run that differs in the batch dimension only is
    scaled linearly to the new batch (``rescale``). Otherwise the model is profiled on the
    input and the profile stored under ``name``. Each decision is logged; a new shape after
    the first also raises a :class:`~chainplan.shapecheck.ShapeWarning` saying which.

    The loss stage of the plan is profiled with ``loss_fn`` and a sample target made for
    each input shape from ``target``: a tensor is an example whose first (batch)
    dimension is resized to the input's (rows repeated or dropped, so class labels stay
    valid); a function gets the input and returns its target. The loss is not computed by
    the module: pass the one the training script uses, or none (the loss then costs
    nothing in the plan).

    Under ``torch.no_grad()`` the module is the plain model. Its parameters and buffers are
    the model's own tensors (no copies) under the model's own names: ``state_dict()`` has
    exactly the keys of ``model.state_dict()``, and state dicts load both ways.

    Args:
        model: the model as written: an ``nn.Sequential`` called with one tensor is the
            chain of its stages (nested Sequentials flattened); any other model is split
            from its graph at the first forward (``chainplan.stages`` shows the split) and
            called as written, ``net(idx, mask=mask)``: its first argument is the chain
            input, the others are side inputs and are part of what makes a plan valid.
            The batch is dimension 0 of the first argument.

    Keyword Args:
        budget: activation memory budget (chain input included): bytes, a size such as
            ``"2GiB"``, or ``"min"`` for the algorithm's smallest.
        algo: the planning algorithm, as for :func:`chainplan.plan` (default: ``rotor-ops``
            for a model captured from its graph, else ``rotor``).
        bandwidth: host-device copy bandwidth of the offloading algorithms (``pofo``,
            ...), as for :func:`chainplan.plan`: bytes per second, ``"12GB/s"``, or
            ``"auto"`` (measured once and recorded with the run). Default: None (required
            by those algorithms, refused by the others).
        loss_fn: the training loss, called as ``loss_fn(output, target)`` when a target
            is given, else ``loss_fn(output)``; profiled, never called in training
            (default: None).
        target: the sample target for ``loss_fn``: an example tensor or a function of
            the input (default: None; required when ``loss_fn`` takes a target).
        name: the model's name in the database (default: the model's class name).
        slots: memory slots of the planner's discretization (default: the algorithm's).
        reuse: look for stored profiles before profiling (default: True).
        rescale: plan a new batch size from a stored profile scaled to it (default: True;
            False profiles the new shape).
        repeats: timed repetitions per stage when profiling, ≥ 1 (default: 3).
        warmup: untimed repetitions first, ≥ 0 (default: 1).

    Raises:
        ProfileError: at construction, an empty nn.Sequential, ``loss_fn`` takes a
            target and none is given, or a profiling option is out of range.
        PlanError: at construction, an unknown algorithm, a malformed budget, or a
            bandwidth missing, malformed or given to an algorithm that does not use it.
        InfeasibleBudget: at the first forward of a shape, the budget is below the
            algorithm's smallest for that shape (the message and ``min_budget_bytes``
            give it).
    """

    # Set through __dict__ (see __init__); declared for the type checker.
    loss_fn: LossFn | None
    target: Target | None

    def __init__(self, model: nn.Module, *, budget: Budget, algo: str | None = None,
                 bandwidth: float | str | None = None, loss_fn: LossFn | None = None,
                 target: Target | None = None, name: str | None = None,
                 slots: int | None = None, reuse: bool = True, rescale: bool = True,
                 repeats: int = 3, warmup: int = 1) -> None:
        super().__init__()
        if isinstance(model, nn.Sequential):
            flatten_stages(model)  # an empty chain: say so now, not at the first forward
        request = _budget_request(budget, algo or "rotor", slots, 0,
                                  bandwidth=bandwidth is not None)
        auto = isinstance(bandwidth, str) and bandwidth.strip().lower() == "auto"
        if bandwidth is not None and not auto:  # "auto" is measured with the first profile
            request["bandwidth"] = _bandwidth(bandwidth, None)
        _check_loss(loss_fn, target)
        for option, value, least in (("repeats", repeats, 1), ("warmup", warmup, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ProfileError(f"{option} must be an integer ≥ {least} (got {value!r})")
        # Plain attributes, not submodules: the loss and the model stay out of
        # state_dict(), whose keys are the model's own (its children are registered below).
        self.__dict__["_model"] = model
        self.__dict__["loss_fn"] = loss_fn
        self.__dict__["target"] = target
        self.name = name or type(model).__name__
        self.budget, self.algo, self.slots = budget, algo, slots
        self.bandwidth = "auto" if auto else request.get("bandwidth")
        self.reuse, self.rescale = reuse, rescale
        self.repeats, self.warmup = repeats, warmup
        self._cache: dict[tuple[Any, ...], nn.Module] = {}  # the executors, by _key
        self._plans: dict[tuple[Any, ...], Plan] = {}
        adopt(self, model)  # state_dict() keys are the model's own

    @property
    def model(self) -> nn.Module:
        """The wrapped model (its parameters are this module's)."""
        wrapped: nn.Module = self.__dict__["_model"]
        return wrapped

    @property
    def plans(self) -> list[Plan]:
        """The plans made so far, one per kind of input, in the order they came."""
        return list(self._plans.values())

    def train(self, mode: bool = True) -> Checkpointed:
        super().train(mode)
        self.model.train(mode)  # the wrapped container's own flag, for the no-grad path
        return self

    def forward(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        if not torch.is_grad_enabled():
            plain: torch.Tensor = self.model(x, *args, **kwargs)
            return plain
        net = self._cache.get(_key(x, args, kwargs))
        if net is None:
            net = self.executor(x, *args, **kwargs)
        out: torch.Tensor = net(x, *args, **kwargs)
        return out

    def executor(self, x: torch.Tensor, *args: Any, **kwargs: Any) -> nn.Module:
        """The executor for calls like ``(x, *args, **kwargs)``: cached, else planned now
        (see the class)."""
        key = _key(x, args, kwargs)
        net = self._cache.get(key)
        if net is not None:
            return net
        if x.dim() == 0:
            raise ProfileError("Checkpointed needs a batched input (dimension 0 is the batch; "
                               "got a 0-dimensional tensor)")
        shape = tuple(int(d) for d in x.shape)
        p, how = self._plan_for(x, shape, args, kwargs)
        executor: nn.Module = wrap(p, self.model)
        msg = (f"Checkpointed({self.name}): input {_describe(key)}: {how}; {p.algo} plan, "
               f"predicted peak {p.peak_bytes / 2**20:.1f} MiB for a budget of "
               f"{p.budget_bytes / 2**20:.1f} MiB")
        _log.info(msg)
        if self._cache:
            before = "; ".join(_describe(k) for k in self._cache)
            # Callers: executor, forward, Module._call_impl, Module._wrapped_call_impl.
            warnings.warn(f"{msg} (a new kind of input: planned before for {before})",
                          ShapeWarning, stacklevel=5)
        self._cache[key], self._plans[key] = executor, p
        return executor

    def _plan_for(self, x: torch.Tensor, shape: tuple[int, ...], args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[Plan, str]:
        """A plan for calls like ``(x, *args, **kwargs)``, and how its profile was found."""
        run, scaled = None, False
        if self.reuse:
            runs = stored_runs(signature=model_signature(self.model, x.device),
                               dtype=compute_dtype(self.model, x), device=str(x.device),
                               torch_version=torch.__version__, loss=loss_name(self.loss_fn))
            run, scaled = choose(runs, shape, rescale=self.rescale)
        if run is None:
            prof = profile_model(self.model, x, *args, loss_fn=self.loss_fn,
                                 target=self._sample_target(x), repeats=self.repeats,
                                 warmup=self.warmup, name=self.name, **kwargs)
            return self._plan(prof, shape), f"profiled anew (run {prof.run_id})"
        if not scaled:
            return self._plan(run.run_id, shape), f"reused the stored profile (run {run.run_id})"
        path = write_scaled_chain(run, shape[0], default_profile_dir() / "scaled")
        bandwidth = self.bandwidth
        if bandwidth == "auto":  # a chain file has no run to record a measurement with
            bandwidth = _bandwidth("auto", run.run_id)
        p = dataclasses.replace(self._plan(path, shape, bandwidth), input_shape=shape)
        return p, (f"planned from the stored profile of run {run.run_id} (input shape "
                   f"{list(run.input_shape)}) scaled to batch {shape[0]}, an estimate "
                   f"(sizes and times × {shape[0] / run.batch:g}; chain file {path})")

    def _plan(self, source: Any, shape: tuple[int, ...],
              bandwidth: float | str | None = None) -> Plan:
        try:
            return _plan(source, budget=self.budget, algo=self.algo, slots=self.slots,
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


def _key(x: torch.Tensor, args: tuple[Any, ...] = (),
         kwargs: dict[str, Any] | None = None) -> tuple[Any, ...]:
    """What makes a plan valid for a call: the chain input's shape, dtype and device, the
    autocast state, and the other arguments' shapes and dtypes (values, for non-tensors)."""
    if not isinstance(x, torch.Tensor):
        raise ProfileError(f"Checkpointed takes one tensor first, the chain input (got "
                           f"{type(x).__name__})")
    kind = x.device.type
    cast = torch.get_autocast_dtype(kind) if torch.is_autocast_enabled(kind) else None
    key: tuple[Any, ...] = (x.shape, x.dtype, x.device, cast)
    if args or kwargs:
        from chainplan.graph.chain import args_key

        key += (args_key(args, kwargs or {}),)
    return key


def _describe(key: tuple[Any, ...]) -> str:
    """An input as :func:`_key` sees it: ``shape [4, 3, 12, 12], float32 on cpu``."""
    shape, dtype, device, cast = key[:4]
    text = f"shape {list(shape)}, {str(dtype).removeprefix('torch.')} on {device}"
    return text + (f" under autocast {str(cast).removeprefix('torch.')}" if cast else "")


def _check_loss(loss_fn: LossFn | None, target: Target | None) -> None:
    """Refuse a loss that will fail at the first forward, after profiling every stage."""
    if loss_fn is None:
        if target is not None:
            raise ProfileError("target= is the sample target of the loss: give loss_fn= too")
        return
    if not callable(loss_fn):
        raise ProfileError(f"loss_fn must be callable (got {type(loss_fn).__name__})")
    if target is not None:
        if not isinstance(target, torch.Tensor) and not callable(target):
            raise ProfileError("target must be an example target tensor or a function of the "
                               f"input (got {type(target).__name__})")
        return
    fn = loss_fn.forward if isinstance(loss_fn, nn.Module) else loss_fn
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return  # no signature to read (a builtin): it is called with the output alone
    try:
        sig.bind(None)
    except TypeError:
        raise ProfileError(
            f"loss_fn {loss_name(loss_fn)} takes a target, and Checkpointed profiles it before "
            "the first step: give a sample target, target=y (an example batch; its first "
            "dimension follows the input's) or target=lambda x: ... (made from the input)"
        ) from None
