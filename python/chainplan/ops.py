"""The operations of a checkpointing sequence, mirroring the Go type (DESIGN.md, "Sequence").

The alphabet every plan document, executor and recomputing pipeline stage shares; it
imports nothing of chainplan, so that the documents built on it (:mod:`chainplan.plandoc`,
:mod:`chainplan.towerplan`, :mod:`chainplan.pipeline.parts`) do not import each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Op", "OpKind"]

OpKind = Literal["F_all", "F_ck", "F_none", "B", "free_grad"]


@dataclass(frozen=True)
class Op:
    """One operation of a sequence.

    Attributes:
        kind: ``F_all`` (forward recording the graph), ``F_ck`` (forward without graph,
            input kept), ``F_none`` (forward without graph, input freed) or ``B``
            (backward); in a multichain plan also ``free_grad`` (drop the gradient of a
            tower's input).
        stage: 1-based stage index; the loss is stage L+1. In a multichain plan, the stage
            within the branch, and 0 for the joint loss and ``free_grad``.
        option: on an ``F_all``, the stage's operation-level option (1, 2, ...: its first
            forward keeps what the option keeps and the rest is recomputed right before
            its backward; :attr:`Plan.choices` says what); 0, the default, keeps everything.
            Multichain plans run none.
        branch: in a multichain plan, the tower (1..K; 0 for the joint loss); else 0.
    """

    kind: OpKind
    stage: int
    option: int = 0
    branch: int = 0

    def __str__(self) -> str:
        if self.kind == "free_grad":
            return f"free_grad {self.branch}"
        if self.stage == 0:
            return f"{self.kind} loss"
        if self.branch:
            return f"{self.kind} {self.branch}.{self.stage}"
        if self.option:
            return f"{self.kind} {self.stage}/{self.option}"
        return f"{self.kind} {self.stage}"
