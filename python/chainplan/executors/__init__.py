"""Executors: nn.Modules that run a planned schedule inside the training loop."""

from __future__ import annotations

from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.offload import OffloadedChain

__all__ = ["CheckpointedChain", "OffloadedChain"]
