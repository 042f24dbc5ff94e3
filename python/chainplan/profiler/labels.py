"""The names and dtype a profile records: the device's model, each stage's path in the
model (and in the error of a stage that fails), and the dtype the stages compute in."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.profilerow import cpu_name

__all__ = ["compute_dtype", "device_name", "naming_stage", "stage_name"]


def device_name(device: torch.device) -> str:
    """The device's model name, as a profile records it (the CPU's for the CPU)."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_name()


def stage_name(model: nn.Module, stage: nn.Module, k: int) -> str:
    """``path:Class`` of stage ``k`` within ``model`` (``k:Class`` when it has no path)."""
    for name, mod in model.named_modules():
        if mod is stage and name:
            return f"{name}:{type(stage).__name__}"
    return f"{k}:{type(stage).__name__}"


def compute_dtype(model: nn.Module, sample: torch.Tensor) -> str:
    """The dtype a profile's stages compute in, as stored in the run's ``dtype`` column.

    Under ``torch.autocast`` for the sample's device it is ``"autocast:<dtype>"`` (e.g.
    ``"autocast:bfloat16"``: the parameters stay in their dtype, the eligible operations
    run in the autocast dtype); otherwise the sample's floating dtype, or the parameters'
    dtype for integer samples (token ids).
    """
    if torch.is_autocast_enabled(sample.device.type):
        dtype = torch.get_autocast_dtype(sample.device.type)
        return "autocast:" + str(dtype).removeprefix("torch.")
    if sample.is_floating_point():
        return str(sample.dtype).removeprefix("torch.")
    return _param_dtype(model)


def _param_dtype(model: nn.Module) -> str:
    for p in model.parameters():
        return str(p.dtype).removeprefix("torch.")
    return "float32"


@contextlib.contextmanager
def naming_stage(k: int, name: str) -> Iterator[None]:
    """Re-raise an error of measuring stage ``k`` as a :class:`ProfileError` naming it.

    A stage's own exception (a shape mismatch, a dtype error, an out-of-memory) reaches the
    user from inside the profiler's measuring loop, with nothing saying which of perhaps
    hundreds of stages raised; the original stays the ``__cause__``.
    """
    try:
        yield
    except Exception as err:
        raise ProfileError(f"stage {k} ({name}) failed while profiling: "
                           f"{type(err).__name__}: {err}", stage_index=k,
                           stage_name=name) from err
