"""What a stage is: the declared stages of an ``nn.Sequential``, or the split of any model.

* :func:`flatten_stages` returns the stages a chain declares: the children of an
  ``nn.Sequential``, nested Sequentials flattened.
* :func:`stages` shows the chain chainplan uses for any model called with given arguments:
  the declared stages of an ``nn.Sequential``, or those extracted from the model's graph
  (:mod:`chainplan.graph`).

This module is callable: ``chainplan.stages(model, x)`` is :func:`stages`, whether
``chainplan.stages`` was reached as the package's attribute or imported as this module
(an import of a submodule replaces the package attribute of the same name, so the
function could not be ``chainplan.stages`` otherwise).
"""

from __future__ import annotations

import sys
import types
from typing import TYPE_CHECKING, Any

from torch import nn

from chainplan.errors import ProfileError

if TYPE_CHECKING:
    from chainplan.graph.describe import ChainSplit

__all__ = ["flatten_stages", "stages"]


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


def stages(model: nn.Module, *args: Any, **kwargs: Any) -> ChainSplit:
    """Show how chainplan cuts ``model`` into a chain, without profiling it.

    Usage::

        print(chainplan.stages(model, idx, mask=mask))

    Args:
        model: the model. An ``nn.Sequential`` called with one tensor is the chain of its
            declared stages; any other model is captured with ``torch.export`` and cut
            where every path from its first tensor argument to its output crosses
            (:mod:`chainplan.graph`).
        args, kwargs: a sample call, as the training loop makes it.

    Returns:
        The :class:`~chainplan.graph.describe.ChainSplit`: ``print()`` it for a table of
        the stages (module paths, operations, outputs, side values read).

    Raises:
        CaptureError: the model cannot be captured (the message names the construct and
            the fallback: declaring the stages as an ``nn.Sequential``).

    Warns:
        BranchWarning: long skip connections forced part of the model into one stage.
    """
    from chainplan.graph.split import split_of

    return split_of(model, args, kwargs)


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`stages` (module docstring)."""

    def __call__(self, model: nn.Module, *args: Any, **kwargs: Any) -> ChainSplit:
        return stages(model, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
