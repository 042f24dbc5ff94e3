"""Chains from models as people write them: graph capture, cut points, stages, side inputs.

A model that is not an ``nn.Sequential`` of one-tensor stages (a GPT looping over a
``ModuleList``, a model taking an attention mask, a ResNet of residual blocks) is captured
with ``torch.export`` and cut into a chain where every path from its input to its output
crosses (:mod:`~chainplan.graph.capture`, :mod:`~chainplan.graph.cuts`,
:mod:`~chainplan.graph.analysis`); module boundaries are preferred and tiny stages merged
(:mod:`~chainplan.graph.choose`); tensors the stages share but none produces are side
values, computed once per step (:mod:`~chainplan.graph.partition`). The stages run with the
model's own parameters (:mod:`~chainplan.graph.stage`); :mod:`~chainplan.graph.chain` puts
it together, the executors run plans on it (:mod:`~chainplan.executors.graphplan`) and
:mod:`~chainplan.graph.split` chooses between declared and extracted stages.
"""

from __future__ import annotations

__all__: list[str] = []
