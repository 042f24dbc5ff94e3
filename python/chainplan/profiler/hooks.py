"""``chainplan.record``: a plannable profile from ordinary training steps.

Where :func:`chainplan.profile` runs each stage in isolation, ``record`` watches the model
while the user's own loop trains it and measures the same quantities, so that a normal
training run yields a profile the planners accept without a separate pass:

* **times** of every stage, from hooks: forward pre-hook to forward hook, and from the hook
  on the stage output's gradient to the hook on its input's gradient (the first stage, whose
  input needs no gradient, ends with the backward pass). Only timestamps are taken (CUDA
  events on a GPU, read once at the end), a few microseconds per stage and step;
* **memory** (saved bytes ``ā``, temporaries ``o_F``/``o_B``), on one sampled step only,
  with saved-tensor hooks and allocator probes (:mod:`chainplan.profiler.stepmemory`). CPU
  probes cost about 10 µs per operator, so that step is left out of the times;
* **the loss**, when given as ``record(model, loss_fn=...)``: its forward is the loss call
  itself, its backward runs from the hook on the loss value to the hook on ``δ_L``. The
  time between the last stage's forward and its backward is not the loss (it also holds the
  script's own work and the start of ``backward()``), so without ``loss_fn`` the loss stage
  costs nothing, as with ``profile()`` without one;
* the real **batch size, input shape and compute dtype**, from the first stage's input on
  the measured step.

Steps: the first ``warmup`` steps (lazy allocations, optimizer state, caches) are skipped,
the next is measured for memory (the one after it if it had no backward or no loss, up to
three tries), and every later complete step with the same input shape is one timed
repetition (``rep``). A step starts with a forward of the first stage with
grad enabled; steps without a full backward, such as evaluation passes under grad, are
ignored.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import torch
from torch import nn

from chainplan import _bind
from chainplan.errors import ProfileError
from chainplan.profiler.document import Profile
from chainplan.profiler.filename import check_profile_name, new_profile_path
from chainplan.profiler.labels import device_name
from chainplan.profiler.recording import LossFn, Recording
from chainplan.profiler.recordroute import ChainRoute
from chainplan.profiler.signature import model_signature
from chainplan.profiler.spread import DEFAULT_SPREAD_WARNING, warn_if_spread
from chainplan.profilerow import ProfileMetadata
from chainplan.schema import write_profile
from chainplan.sequential import flatten_stages

__all__ = ["Recording", "record_model"]  # Recording: profiler.recording's

@contextlib.contextmanager
def record_model(
    model: nn.Module,
    *,
    loss_fn: LossFn | None = None,
    warmup: int = 1,
    name: str | None = None,
    path: str | os.PathLike[str] | None = None,
    ingest: bool = True,
    spread_warning: float | None = DEFAULT_SPREAD_WARNING,
    keep_logits: bool = False,
) -> Iterator[Recording]:
    """Record a plannable profile over ordinary training steps (see the module doc).

    Usage::

        with chainplan.record(model, loss_fn=nn.CrossEntropyLoss()) as rec:
            for x, y in loader:
                rec.loss_fn(model(x), y).backward(); opt.step(); opt.zero_grad()
        plan = chainplan.plan(rec.profile, budget="min")

    Args:
        model: the model: an ``nn.Sequential`` chain (nested Sequentials are flattened), or
            any other model, whose training calls then run through the chain ``profile()``
            splits it into, stage after stage (:mod:`chainplan.profiler.recordroute`;
            the stages of the first call's kind of input are recorded).

    Keyword Args:
        loss_fn: the training loss. A module (``nn.CrossEntropyLoss()``) is hooked, so
            calling it as usual measures it; a function is measured when called through
            ``rec.loss_fn``. None: the loss the model's forward computes itself (given
            ``labels=``), else a loss stage of no cost, as in ``profile()``.
        warmup: first steps neither measured nor timed, ≥ 0 (default: 1). The step after
            them is measured for memory; every later step is timed. At least
            ``warmup + 2`` training steps are needed.
        name: the model's name in the database and in the file's name (default: its
            class name): a label, never a path, refused as ``profile()`` refuses it.
        path: the Arrow file to write (default: a new file in the profile folder).
        ingest: store the profile in the database (default: True).
        spread_warning: warn when a stage's times over the timed steps spread more than
            this, as ``(max − min) / median`` (default: 0.25; None never warns).
        keep_logits: a language model computing its own loss returns its logits beside it
            (default: False: ``logits`` is None while recording, its head fused with its
            loss), as in ``profile()``.

    Raises:
        ProfileError: a stage does not return one tensor, too few complete steps were
            recorded, or ``name`` cannot name a profile (at the ``with``).
        CaptureError: a model that is not a Sequential cannot be captured (at its first
            training call).
    """
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ProfileError(f"warmup must be an integer ≥ 0 (got {warmup!r})")
    name = check_profile_name(name, default_from=model)  # at the `with`, before any step
    declared = isinstance(model, nn.Sequential)
    stages = flatten_stages(model) if declared else []
    try:
        device = next(model.parameters()).device
    except StopIteration:
        device = torch.device("cpu")
    rec = Recording(model, stages, device, loss_fn, warmup, keep_logits)
    handles = rec.install()
    route = contextlib.nullcontext() if declared else ChainRoute(model, rec)
    try:
        with route:
            yield rec
    finally:
        for h in handles:
            h.remove()
        rec.remove()
        rec.close()
    rows = rec.rows()
    measured = rec.measured_step()
    shape = list(measured.input_shape)
    meta = ProfileMetadata(
        model_name=name, model_signature=model_signature(model, device),
        torch_version=torch.__version__, device=str(device), device_name=device_name(device),
        dtype=measured.dtype, batch_size=shape[0] if shape else 1, input_shape=shape,
        threads=torch.get_num_threads(),
        timing_method="cuda_event" if device.type == "cuda" else "perf_counter",
        warmup_reps=warmup, reps=max(r.rep for r in rows) + 1,
        extra={"keep_logits": str(keep_logits).lower()})
    if path is None:
        path = new_profile_path(name, "record")
    out = write_profile(Path(path), rows, meta)
    run_id = None
    if ingest:
        run_id = _bind.ingest(str(out))
    rec.profile = Profile(path=out, run_id=run_id, model_name=name,
                          stage_names=tuple(rec.names), rows=tuple(rows), seconds=0.0,
                          keep_logits=keep_logits)
    # stacklevel 4: past this generator and contextlib, to the user's `with` statement.
    warn_if_spread(rec.profile.spread, spread_warning, what=f"recorded profile of {name}",
                   stacklevel=4)
