"""What ``chainplan.profile`` measures for a call: its chain input, its loss stage and the
provenance written with the profile (the call signature included,
:mod:`chainplan.profiler.stored`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.graph.call import chain_input, training_call
from chainplan.graph.split import ProfiledChain
from chainplan.profiler.labels import compute_dtype, device_name
from chainplan.profiler.signature import model_signature
from chainplan.profiler.stored import call_signature
from chainplan.profilerow import MEASUREMENT_REVISION, ProfileMetadata
from chainplan.reuse import model_loss_name

__all__: list[str] = []

LossFn = Callable[..., torch.Tensor]


def chain_sample(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> torch.Tensor:
    """The chain input of a profiled call (ProfileError without a tensor argument)."""
    if isinstance(model, nn.Sequential):
        x = args[0] if args else next(iter(kwargs.values()), None)
    else:
        x = chain_input(model, args, kwargs)
    if not isinstance(x, torch.Tensor):
        got = f"a {type(x).__name__}" if x is not None else "no tensor argument"
        raise ProfileError(f"profile() needs a sample call of the model with a tensor, its "
                           f"chain input, as the first tensor argument (got {got})")
    return x


def loss_stage(model: nn.Module, chain: ProfiledChain, loss_fn: LossFn | None,
                target: torch.Tensor | None) -> tuple[Callable[..., torch.Tensor], str] | None:
    """The loss stage L+1 as ``measure_loss`` calls it (on a_L and the target), and its
    name: ``loss_fn`` on what ``forward`` returns, or the loss ``forward`` computes."""
    finish = chain.finish
    if loss_fn is not None:
        name = str(getattr(loss_fn, "__name__", type(loss_fn).__name__))
        if target is not None:
            return (lambda a, t: loss_fn(finish(a), t)), name
        return (lambda a, _t: loss_fn(finish(a))), name
    if chain.computes_loss:
        def model_loss(a: torch.Tensor, _t: torch.Tensor) -> torch.Tensor:
            loss = chain.model_loss(finish(a))
            assert loss is not None
            return loss

        return model_loss, model_loss_name(model, chain.logits_dropped)
    return None


def profile_metadata(model: nn.Module, sample: torch.Tensor, name: str, repeats: int, warmup: int,
              args: tuple[Any, ...], kwargs: dict[str, Any], loss: str,
              target: torch.Tensor | None) -> ProfileMetadata:
    """The provenance of a profile of this call, its call signature included."""
    device = sample.device
    name_of_device = device_name(device)
    if not isinstance(model, nn.Sequential):
        args, kwargs = training_call(model, args, kwargs)
    call = call_signature(args, kwargs, loss=loss, target=target, device_name=name_of_device)
    return ProfileMetadata(
        model_name=name,
        model_signature=model_signature(model, device),
        torch_version=torch.__version__,
        device=str(device),
        device_name=name_of_device,
        dtype=compute_dtype(model, sample),
        batch_size=int(sample.shape[0]) if sample.dim() > 0 else 1,
        input_shape=list(sample.shape),
        threads=torch.get_num_threads(),
        timing_method="cuda_event" if device.type == "cuda" else "perf_counter",
        warmup_reps=warmup,
        reps=repeats,
        extra={"call_signature": call, "measurement_revision": MEASUREMENT_REVISION},
    )
