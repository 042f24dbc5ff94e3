"""The stages a chain declares: the children of an ``nn.Sequential``, nested Sequentials
flattened (:func:`flatten_stages`).

The lowest notion of a stage, shared by the graph split, the recorder, the executors and
the pipeline runner; :mod:`chainplan.stages` re-exports it beside ``chainplan.stages()``,
which shows the split of any model.
"""

from __future__ import annotations

from torch import nn

from chainplan.errors import ProfileError

__all__ = ["flatten_stages"]


def flatten_stages(model: nn.Module) -> list[nn.Module]:
    """Return the stages of a chain model, flattening nested ``nn.Sequential`` containers.

    Args:
        model: an ``nn.Sequential`` (possibly nested); each non-Sequential child is one
            stage, and each must take one tensor and return one tensor.

    Raises:
        ProfileError: the model is not an ``nn.Sequential``, with a recipe for declaring
            its stages.
    """
    if not isinstance(model, nn.Sequential):
        raise ProfileError(
            f"this needs the stages declared as an nn.Sequential, got {type(model).__name__} "
            "(put each block that takes one tensor and returns one tensor in order, e.g. "
            "nn.Sequential(stem, *blocks, head), residual or branching parts inside one "
            "block; chainplan.profile, plan(...).wrap and Checkpointed take any model as "
            "written and split it from its graph)")
    out: list[nn.Module] = []
    for child in model.children():
        if isinstance(child, nn.Sequential):
            out.extend(flatten_stages(child))
        else:
            out.append(child)
    if not out:
        raise ProfileError("the model has no stages (an empty nn.Sequential)")
    return out
