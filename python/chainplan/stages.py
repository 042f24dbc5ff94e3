"""Turning a model into the chain of stages the planners work on."""

from __future__ import annotations

from torch import nn

from chainplan.errors import ProfileError

__all__: list[str] = []


def flatten_stages(model: nn.Module) -> list[nn.Module]:
    """Return the stages of a chain model, flattening nested ``nn.Sequential`` containers.

    Args:
        model: an ``nn.Sequential`` (possibly nested); each non-Sequential child is one
            stage, and each must take one tensor and return one tensor.

    Raises:
        ProfileError: the model is not a chain, with a recipe for declaring its stages.
    """
    if not isinstance(model, nn.Sequential):
        raise ProfileError(
            f"chainplan needs a chain of stages, got {type(model).__name__} "
            "(declare the stages as an nn.Sequential: put each block that takes one tensor "
            "and returns one tensor in order, e.g. nn.Sequential(stem, *blocks, head); "
            "residual or branching parts go inside one block)")
    stages: list[nn.Module] = []
    for child in model.children():
        if isinstance(child, nn.Sequential):
            stages.extend(flatten_stages(child))
        else:
            stages.append(child)
    if not stages:
        raise ProfileError("the model has no stages (an empty nn.Sequential)")
    return stages
