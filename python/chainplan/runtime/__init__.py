"""What running a stage with torch needs, whoever runs it: the executors, the profiler that
measures stages, the graph stages and the pipeline's layers.

:mod:`~chainplan.runtime.side` holds a step's side values (tensors the stages share but
none produces) and joins their gradients; :mod:`~chainplan.runtime.saved` keeps or drops
what a stage's forward saves for its backward; :mod:`~chainplan.runtime.recompute` makes a
recomputed forward match the first (RNG, autocast, frozen buffers);
:mod:`~chainplan.runtime.compiled` runs a stage's call eagerly inside ``torch.compile``.
These sit below the executors (docs/ARCHITECTURE.md, "Python layers"), so that measuring and
capturing a model never imports the package that runs plans.
"""

from __future__ import annotations

__all__: list[str] = []
