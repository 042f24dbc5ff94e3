"""What a stage is: the declared stages of an ``nn.Sequential``, or the split of any model.

* :func:`flatten_stages` returns the stages a chain declares: the children of an
  ``nn.Sequential``, nested Sequentials flattened (:mod:`chainplan.sequential`, re-exported
  here).
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
from typing import Any

from torch import nn

from chainplan.graph.describe import ChainSplit
from chainplan.graph.split import split_of
from chainplan.sequential import flatten_stages

__all__ = ["flatten_stages", "stages"]


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
    return split_of(model, args, kwargs)


class _CallableModule(types.ModuleType):
    """This module, callable as :func:`stages` (module docstring)."""

    def __call__(self, model: nn.Module, *args: Any, **kwargs: Any) -> ChainSplit:
        return stages(model, *args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
