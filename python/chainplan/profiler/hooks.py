"""``chainplan.record``: per-stage times and sizes over ordinary training steps.

Where :func:`chainplan.profile` measures each stage in isolation (memory included),
``record`` watches a model while it trains: forward pre/post hooks time each stage's
forward, a hook on each stage's output gradient marks the start of its backward and a
hook on its input gradient the end (the first stage, whose input needs no gradient, ends
with the backward pass). Only timestamps and sizes are taken in the hooks, so the overhead
is a few microseconds per stage and step; on a GPU the timestamps are CUDA events, read
once at the end. The result is a version-1 profile file without memory columns, one row
per stage and step, for watching drift over a run.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils.hooks import RemovableHandle

from chainplan.errors import ProfileError
from chainplan.profiler.run import Profile, _device_name, _param_dtype, default_profile_dir
from chainplan.profiler.signature import model_signature
from chainplan.schema import ProfileMetadata, ProfileRow, write_profile
from chainplan.stages import flatten_stages

__all__ = ["Recording", "record_model"]


class _Clock:
    """Timestamps: CUDA events on a GPU (resolved later), nanoseconds on the CPU."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"

    def now(self) -> Any:
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            ev.record()
            return ev
        return time.perf_counter_ns()

    def seconds(self, a: Any, b: Any) -> float:
        if self.cuda:
            return float(a.elapsed_time(b)) / 1e3
        return float(b - a) / 1e9


@dataclass
class _Step:
    fwd: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    bwd_start: dict[int, Any] = field(default_factory=dict)
    bwd_end: dict[int, Any] = field(default_factory=dict)
    in_bytes: dict[int, int] = field(default_factory=dict)
    out_bytes: dict[int, int] = field(default_factory=dict)


class Recording:
    """What :func:`record_model` collects; ``profile`` is set when the block exits."""

    def __init__(self, model: nn.Module, stages: list[nn.Module], device: torch.device) -> None:
        self.model = model
        self.stages = stages
        self.clock = _Clock(device)
        self.steps: list[_Step] = []
        self.profile: Profile | None = None
        self._fwd_start: dict[int, Any] = {}

    @property
    def num_steps(self) -> int:
        """Steps recorded so far (a step starts with a forward of the first stage)."""
        return len(self.steps)

    def _pre(self, k: int, inputs: tuple[Any, ...]) -> None:
        if not torch.is_grad_enabled():
            return
        if k == 1:
            self.steps.append(_Step())
        if self.steps:
            x = inputs[0] if inputs else None
            if isinstance(x, torch.Tensor):
                self.steps[-1].in_bytes[k] = x.numel() * x.element_size()
            self._fwd_start[k] = self.clock.now()

    def _post(self, k: int, inputs: tuple[Any, ...], out: Any) -> None:
        if not torch.is_grad_enabled() or not self.steps or k not in self._fwd_start:
            return
        step = self.steps[-1]
        step.fwd[k] = (self._fwd_start.pop(k), self.clock.now())
        if not isinstance(out, torch.Tensor):
            raise ProfileError(f"stage {k} returned {type(out).__name__}; "
                               "a chain stage must return one tensor")
        step.out_bytes[k] = out.numel() * out.element_size()
        if out.requires_grad:
            out.register_hook(  # type: ignore[no-untyped-call]
                lambda g, k=k, step=step: self._grad_out(k, step))
        x = inputs[0] if inputs else None
        if isinstance(x, torch.Tensor) and x.requires_grad and k > 1:
            x.register_hook(  # type: ignore[no-untyped-call]
                lambda g, k=k, step=step: self._grad_in(k, step))

    def _grad_out(self, k: int, step: _Step) -> None:
        step.bwd_start[k] = self.clock.now()
        if k == 1:
            # The first stage has no input gradient: its backward ends with the pass.
            torch.autograd.Variable._execution_engine.queue_callback(
                lambda: step.bwd_end.__setitem__(1, self.clock.now()))

    def _grad_in(self, k: int, step: _Step) -> None:
        # The gradient of stage k's input is computed by stage k's backward.
        step.bwd_end[k] = self.clock.now()

    def rows(self) -> list[ProfileRow]:
        """One row per stage and complete step (forward and backward of every stage)."""
        if self.clock.cuda:
            torch.cuda.synchronize()
        params = [sum(p.numel() * p.element_size() for p in st.parameters())
                  for st in self.stages]
        names = [f"{k}:{type(st).__name__}" for k, st in enumerate(self.stages, start=1)]
        n = len(self.stages)
        rows: list[ProfileRow] = []
        rep = 0
        for step in self.steps:
            if len(step.fwd) < n:
                continue
            for k in range(1, n + 1):
                f0, f1 = step.fwd[k]
                b = 0.0
                if k in step.bwd_start and k in step.bwd_end:
                    b = max(0.0, self.clock.seconds(step.bwd_start[k], step.bwd_end[k]))
                rows.append(ProfileRow(k, names[k - 1], rep, self.clock.seconds(f0, f1), b,
                                       step.in_bytes.get(k, 0), step.out_bytes[k], None, None,
                                       None, params[k - 1]))
            rows.append(ProfileRow(n + 1, "loss", rep, 0.0, 0.0, step.out_bytes[n], 0, None,
                                   None, None, 0, stage_kind="loss"))
            rep += 1
        return rows


@contextlib.contextmanager
def record_model(
    model: nn.Module,
    *,
    name: str | None = None,
    path: str | os.PathLike[str] | None = None,
    ingest: bool = True,
) -> Iterator[Recording]:
    """Record per-stage forward and backward times and output sizes while training.

    Usage::

        with chainplan.record(model) as rec:
            for x, y in loader:
                loss_fn(model(x), y).backward(); opt.step(); opt.zero_grad()
        print(rec.profile.run_id)

    Args:
        model: an ``nn.Sequential`` chain (nested Sequentials are flattened).

    Keyword Args:
        name: the model's name in the database (default: its class name).
        path: the Arrow file to write (default: a new file in the profile folder).
        ingest: store the profile in the database (default: True).

    Raises:
        ProfileError: the model is not a chain, or no complete step was recorded.
    """
    stages = flatten_stages(model)
    try:
        device = next(model.parameters()).device
    except StopIteration:
        device = torch.device("cpu")
    rec = Recording(model, stages, device)
    handles: list[RemovableHandle] = []
    for k, st in enumerate(stages, start=1):
        handles.append(st.register_forward_pre_hook(
            lambda _m, inputs, k=k: rec._pre(k, inputs)))
        handles.append(st.register_forward_hook(
            lambda _m, inputs, out, k=k: rec._post(k, inputs, out)))
    try:
        yield rec
    finally:
        for h in handles:
            h.remove()
    rows = rec.rows()
    if not rows:
        raise ProfileError("chainplan.record saw no complete training step "
                           "(a forward of every stage with grad enabled)")
    name = name or type(model).__name__
    meta = ProfileMetadata(
        model_name=name, model_signature=model_signature(model, device),
        torch_version=torch.__version__, device=str(device), device_name=_device_name(device),
        dtype=_param_dtype(model), batch_size=1, input_shape=[],
        threads=torch.get_num_threads(),
        timing_method="cuda_event" if device.type == "cuda" else "perf_counter",
        warmup_reps=0, reps=max(r.rep for r in rows) + 1)
    if path is None:
        stamp = _dt.datetime.now().strftime("%Y%m%d-%H%M%S-%f")
        path = default_profile_dir() / f"{name}-record-{stamp}.arrow"
    out = write_profile(Path(path), rows, meta)
    run_id = None
    if ingest:
        from chainplan import _bind

        run_id = _bind.ingest(str(out))
    rec.profile = Profile(path=out, run_id=run_id, model_name=name,
                          stage_names=tuple(r.stage_name for r in rows[: len(stages)]),
                          rows=tuple(rows), seconds=0.0)
