"""Deprecated path of :mod:`chainplan.pipeline.stagemodule`.

``StageBlock`` is now :class:`~chainplan.pipeline.stagemodule.StageModule` (the module of
one pipeline stage); importing this module warns with the new path.
"""

from __future__ import annotations

from chainplan._moved import warn_moved
from chainplan.pipeline.stagemodule import (
    MicrobatchContext,
    StageModule,
    contiguous_grad,
    layer_seed,
    run_layers,
)

#: The old name of :class:`~chainplan.pipeline.stagemodule.StageModule`.
StageBlock = StageModule

__all__ = ["MicrobatchContext", "StageBlock", "StageModule", "contiguous_grad", "layer_seed",
           "run_layers"]

warn_moved(__name__, "chainplan.pipeline.stagemodule")
