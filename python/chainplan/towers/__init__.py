"""Models of towers joined at the loss: CLIP-style dual encoders, Siamese and triplet networks
(docs/multichain.md).

:mod:`~chainplan.towers.detect` recognizes them, :mod:`~chainplan.towers.profile` measures
each tower once and the join, :mod:`~chainplan.executors.towersplan` runs a multichain plan.
"""

from __future__ import annotations

__all__: list[str] = []
