"""The hooks ``chainplan.record`` installs and what they gather, step by step.

A :class:`Recording` hooks every stage (forward pre-hook and hook, the gradients of its
output and input) and the loss, keeps each training step's timestamps
(:mod:`chainplan.profiler.recorded`), measures one sampled step's memory
(:mod:`chainplan.profiler.stepmemory`), and turns the steps into profile rows.
:func:`chainplan.profiler.hooks.record_model` is the context manager around it that writes
and stores the profile; its module docstring says which steps are warm-up, measured and
timed.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from chainplan.errors import ProfileError
from chainplan.profiler.document import Profile
from chainplan.profiler.labels import compute_dtype, stage_name
from chainplan.profiler.recorded import Clock, Step, recorded_rows
from chainplan.profiler.sizes import nbytes, storage_nbytes
from chainplan.profiler.stepmemory import StepMemory
from chainplan.profilerow import ProfileRow
from chainplan.reuse import model_loss_name
from chainplan.runtime.recompute import RNGState

# How many steps are checked for the stages that draw random numbers.
RNG_CHECKS = 2

__all__ = ["LossFn", "Recording"]

LossFn = Callable[..., torch.Tensor]


class Recording:
    """What :func:`record_model` collects; ``profile`` is set when the block exits.

    Attributes:
        loss_fn: the loss to compute the training loss with, so that it is measured: the
            module given as ``loss_fn`` itself (hooked), or a wrapper of the function
            given; None without ``loss_fn``.
        profile: the recorded :class:`~chainplan.profiler.run.Profile`, after the block.
    """

    def __init__(self, model: nn.Module, stages: list[nn.Module], device: torch.device,
                 loss_fn: LossFn | None, warmup: int, keep_logits: bool = False) -> None:
        self.model = model
        self.keep_logits = keep_logits
        self.stages = stages
        self.device = device
        self.clock = Clock(device)
        self.steps: list[Step] = []
        self.profile: Profile | None = None
        self.warmup = warmup
        self.memory: StepMemory | None = None  # the measured step's, once complete
        self.names = [stage_name(model, st, k) for k, st in enumerate(stages, start=1)]
        self._loss_module = loss_fn if isinstance(loss_fn, nn.Module) else None
        self._loss_name = "none" if loss_fn is None else getattr(
            loss_fn, "__name__", type(loss_fn).__name__)
        self.loss_fn: LossFn | None = loss_fn
        if loss_fn is not None and self._loss_module is None:
            self.loss_fn = self._wrap_loss(loss_fn)
        self._fwd_start: dict[int, Any] = {}
        self._loss_start: Any = None
        self._attempts = 0  # steps measured for memory so far
        self._rng: dict[int, RNGState] = {}  # each stage's state before its forward
        self._rng_checks = 0  # steps checked for the stages drawing random numbers
        # A model split from its graph (recordroute): what its side values hold, whether
        # its forward computes the loss, and whether its output keeps a_L meanwhile.
        self.resident = 0
        self.model_loss = False
        self.holds_end = False
        self._handles: list[RemovableHandle] = []

    def attach(self, stages: list[nn.Module], names: list[str], resident: int,
               model_loss: bool, *, holds_end: bool, logits_dropped: bool = False) -> None:
        """Take the stages of a model split from its graph (at its first recorded call)
        and hook them."""
        self.stages, self.names, self.resident = stages, names, resident
        self.model_loss, self.holds_end = model_loss, holds_end
        if model_loss:
            self._loss_name = model_loss_name(self.model, logits_dropped)
        self._handles.extend(self._stage_hooks())

    @property
    def expects_loss(self) -> bool:
        """Whether steps compute a measured loss (``loss_fn`` given, or the model's own)."""
        return self.loss_fn is not None or self.model_loss

    @property
    def num_steps(self) -> int:
        """Steps recorded so far (a step starts with a forward of the first stage)."""
        return len(self.steps)

    # Stage hooks ------------------------------------------------------------------------

    def _pre(self, k: int, inputs: tuple[Any, ...]) -> None:
        if not torch.is_grad_enabled():
            return
        x = inputs[0] if inputs else None
        if k == 1:
            self._begin_step(x)
        if not self.steps:
            return
        step = self.steps[-1]
        if isinstance(x, torch.Tensor):
            step.in_bytes[k] = storage_nbytes(x)
        if step.memory is not None:
            step.memory.fwd_begin(k, x)
        elif step.random is not None:
            self._rng[k] = RNGState(self.device)
        self._fwd_start[k] = self.clock.now()

    def _begin_step(self, x: Any) -> None:
        self.close()
        shape = tuple(x.shape) if isinstance(x, torch.Tensor) else ()
        dtype = compute_dtype(self.model, x) if isinstance(x, torch.Tensor) else ""
        step = Step(shape, dtype)
        # A step that ends without a backward (or without the loss) is measured again on the
        # next one, a few times only: probes slow a CPU step down several times over.
        if self.memory is None and len(self.steps) >= self.warmup and self._attempts < 3:
            self._attempts += 1
            step.memory = StepMemory(self.device, self.stages, self._loss_module)
            step.probed = True
            step.memory.start()
        elif self._rng_checks < RNG_CHECKS:
            # Which stages draw random numbers (their plans keep a state to replay them,
            # docs/executors.md "RNG states"): read around each stage's forward on the first
            # steps not probed for memory.
            self._rng_checks += 1
            step.random = set()
        self.steps.append(step)

    def _post(self, k: int, inputs: tuple[Any, ...], out: Any) -> None:
        if not torch.is_grad_enabled() or not self.steps or k not in self._fwd_start:
            return
        step = self.steps[-1]
        step.fwd[k] = (self._fwd_start.pop(k), self.clock.now())
        rng = self._rng.pop(k, None)
        if rng is not None and step.random is not None and rng.consumed():
            step.random.add(k)
        if not isinstance(out, torch.Tensor):
            raise ProfileError(f"stage {k} returned {type(out).__name__}; "
                               "a chain stage must return one tensor",
                               stage_index=k, stage_name=self.names[k - 1])
        x = inputs[0] if inputs else None
        if step.memory is not None:
            step.memory.fwd_end(k, x, out)
        if out.requires_grad:
            out.register_hook(  # type: ignore[no-untyped-call]
                lambda g, k=k, step=step: self._grad_out(k, step, g))
        if isinstance(x, torch.Tensor) and x.requires_grad and k > 1:
            x.register_hook(  # type: ignore[no-untyped-call]
                lambda g, k=k, step=step: self._grad_in(k, step, g))

    def _grad_out(self, k: int, step: Step, g: torch.Tensor) -> None:
        now = self.clock.now()
        if k == len(self.stages) and step.loss_is_end and not step.loss_bwd:
            # The loss is a_L: its backward is empty, and a hook on it would run after this
            # one (hooks on a tensor run in the order they were registered).
            self._loss_backward(step)
        if k == len(self.stages) and len(step.loss_bwd) == 1:
            step.loss_bwd.append(now)  # δ_L is here: the loss's backward is over
            if step.memory is not None:
                step.memory.loss_bwd_end(nbytes(g))
        step.bwd_start[k] = now
        if step.memory is not None:
            step.memory.bwd_begin(k)
        if k == 1:
            # The first stage has no input gradient: its backward ends with the pass.
            torch.autograd.Variable._execution_engine.queue_callback(
                lambda: self._backward_done(step))

    def _grad_in(self, k: int, step: Step, g: torch.Tensor) -> None:
        # The gradient of stage k's input is computed by stage k's backward.
        step.bwd_end[k] = self.clock.now()
        if step.memory is not None:
            step.memory.bwd_end(k, nbytes(g))

    def _backward_done(self, step: Step) -> None:
        step.bwd_end[1] = self.clock.now()
        mem = step.memory
        if mem is not None and not mem.finished:
            mem.bwd_end(1, 0)
            mem.finish()
            if mem.complete(with_loss=self.expects_loss):
                self.memory = mem

    # Loss hooks -------------------------------------------------------------------------

    def _wrap_loss(self, fn: LossFn) -> LossFn:
        def loss(*args: Any, **kwargs: Any) -> torch.Tensor:
            self.loss_pre(args)
            value = fn(*args, **kwargs)
            self.loss_post(args, value)
            return value

        return loss

    def loss_pre(self, args: tuple[Any, ...]) -> None:
        step = self.steps[-1] if self.steps else None
        # Only the loss of a step's chain output counts, once per step.
        if (not torch.is_grad_enabled() or step is None or step.loss_fwd is not None
                or len(step.fwd) < len(self.stages)):
            return
        if step.memory is not None:
            step.memory.loss_fwd_begin(a for a in args if isinstance(a, torch.Tensor))
        self._loss_start = self.clock.now()

    def loss_post(self, args: tuple[Any, ...], value: Any) -> None:
        if self._loss_start is None:
            return
        step = self.steps[-1]
        step.loss_fwd = (self._loss_start, self.clock.now())
        self._loss_start = None
        if not isinstance(value, torch.Tensor):
            raise ProfileError(f"the loss returned {type(value).__name__}, not a tensor")
        a_last = args[0] if args and isinstance(args[0], torch.Tensor) else None
        if step.memory is not None:
            step.memory.loss_fwd_end(a_last, value)
        step.loss_is_end = value is a_last
        if value.requires_grad and not step.loss_is_end:
            value.register_hook(  # type: ignore[no-untyped-call]
                lambda g, step=step: self._loss_backward(step))

    def _loss_backward(self, step: Step) -> None:
        step.loss_bwd[:] = [self.clock.now()]
        if step.memory is not None:
            step.memory.loss_bwd_begin()

    def _stage_hooks(self) -> list[RemovableHandle]:
        handles: list[RemovableHandle] = []
        for k, st in enumerate(self.stages, start=1):
            handles.append(st.register_forward_pre_hook(
                lambda _m, inputs, k=k: self._pre(k, inputs)))
            handles.append(st.register_forward_hook(
                lambda _m, inputs, out, k=k: self._post(k, inputs, out)))
        return handles

    def install(self) -> list[RemovableHandle]:
        """Register the hooks; returns their handles (those of stages attached later are
        removed with :meth:`remove`)."""
        handles = self._stage_hooks()
        if self._loss_module is not None:
            handles.append(self._loss_module.register_forward_pre_hook(
                lambda _m, inputs: self.loss_pre(inputs)))
            handles.append(self._loss_module.register_forward_hook(
                lambda _m, inputs, out: self.loss_post(inputs, out)))
        return handles

    def remove(self) -> None:
        """Remove the hooks of stages attached during the recording."""
        for h in self._handles:
            h.remove()
        self._handles = []

    def close(self) -> None:
        """Close the probes of the last step measured for memory, outside any backward.

        A complete measurement's results become readable; an incomplete one (no backward,
        or the loss not seen) is dropped, and the next step is measured instead.
        """
        last = self.steps[-1] if self.steps else None
        if last is None or last.memory is None:
            return
        if last.memory is self.memory:
            last.memory.close()
        else:
            last.memory.abort()
            last.memory = None

    # Results ----------------------------------------------------------------------------

    def rows(self) -> list[ProfileRow]:
        """The profile's rows: times from the timed steps, memory from the measured one."""
        if self.memory is None:
            raise ProfileError(_too_few(self))
        rows = recorded_rows(self.steps, self.memory, self.stages, self.names, self.clock,
                             warmup=self.warmup, loss_name=self._loss_name,
                             resident=self.resident, holds_end=self.holds_end)
        if rows is None:
            raise ProfileError(_too_few(self))
        return rows

    def measured_step(self) -> Step:
        """The step measured for memory (after :meth:`rows` succeeded)."""
        return next(s for s in self.steps if s.memory is not None and s.memory is self.memory)


def _too_few(rec: Recording) -> str:
    return (f"chainplan.record saw {len(rec.steps)} training step(s); it needs {rec.warmup} "
            f"warm-up step(s), one step measured for memory (tried on {rec._attempts}) and at "
            f"least one timed step, each a forward of every stage with grad enabled and a "
            f"backward" + ("" if not rec.expects_loss else
                           ", with the loss computed by rec.loss_fn (or the loss module given, "
                           "or the model's forward given labels=)"))
