"""The launch candidate: what :func:`chainplan.parallelize` builds, in one JSON shape.

An advisor's pick (``chainplan search3d --json``), a file a user writes, or a training
script's flags all come down to one :class:`LaunchCandidate` (docs/distributed.md, "The
candidate shape")::

    {"mesh": {"pp": 2, "dp": 2, "tp": 1}, "microbatch": 4, "microbatches": 8,
     "cuts": [3], "checkpoint": ["min", null]}
    {"mesh": {"dp": 2}, "microbatch": 4, "memory": "8GiB"}

* ``mesh``: the size of each named dimension of the ``DeviceMesh`` (a missing one is 1);
  their product is the number of processes.
* ``microbatch``: samples in one micro-batch of one data-parallel replica.
* ``microbatches``: micro-batches per optimizer step (default 1): one replica's batch is
  ``microbatch * microbatches``, the global batch ``dp`` times that.
* ``cuts``: the last chain layer (1-based, inclusive, as ``Stage3D.last_layer``) of each
  pipeline stage but the last: ``pp - 1`` increasing layers (empty when ``pp`` is 1).
* ``checkpoint``: the activation budget of each stage's chainplan checkpointing, one value
  for every stage or a list of ``pp``: null or ``"none"`` (no checkpointing), ``"min"``, a
  byte count, or a size such as ``"2GiB"``.
* ``memory``: one rank's device memory (bytes or a size), for ``pp`` = 1 and ``tp`` = 1:
  :func:`chainplan.parallelize` plans the rank's activations within it less what the rank
  holds besides them (:func:`chainplan.sharded.rank_memory`), instead of a ``checkpoint``
  budget (give one or the other).

This module never imports torch.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from chainplan.errors import PlanError, ScheduleError
from chainplan.jsonfields import Fields

__all__ = ["DIMS", "Budget", "LaunchCandidate"]

#: The mesh dimensions :func:`chainplan.parallelize` reads, outermost first: pipeline
#: stages, data-parallel replicas, tensor-parallel shards (torchtitan's order).
DIMS: tuple[str, ...] = ("pp", "dp", "tp")

#: One stage's checkpointing budget: None (none), ``"min"``, bytes, or a size string.
Budget = int | str | None


@dataclass(frozen=True)
class LaunchCandidate:
    """One way to run a model on ``pp * dp * tp`` processes (module docstring).

    Raises (from :meth:`from_dict`, :meth:`from_json` and the constructor):
        PlanError: a field out of range, named (``mesh.tp``, ``cuts[1]``, ...).
    """

    pp: int = 1
    dp: int = 1
    tp: int = 1
    microbatch: int = 1
    microbatches: int = 1
    cuts: tuple[int, ...] = ()
    checkpoint: tuple[Budget, ...] = field(default=(None,))
    memory: int | str | None = None

    def __post_init__(self) -> None:
        for name in (*DIMS, "microbatch", "microbatches"):
            value = getattr(self, name)
            where = f"mesh.{name}" if name in DIMS else name
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise PlanError(f"{where}: want an integer ≥ 1 (got {value!r})")
        if len(self.cuts) != self.pp - 1:
            raise PlanError(f"cuts: want {self.pp - 1} layers for {self.pp} pipeline stages "
                            f"(the last layer of each stage but the last; got {list(self.cuts)})")
        for i, c in enumerate(self.cuts):
            if isinstance(c, bool) or not isinstance(c, int) or c < 1 \
                    or (i and c <= self.cuts[i - 1]):
                raise PlanError(f"cuts[{i}]: want an increasing layer number ≥ 1 "
                                f"(got {list(self.cuts)})")
        if len(self.checkpoint) not in (1, self.pp):
            raise PlanError(f"checkpoint: want one budget or {self.pp} (one per stage; got "
                            f"{len(self.checkpoint)})")
        for i, b in enumerate(self.checkpoint):
            if b is not None and (isinstance(b, bool) or not isinstance(b, int | str)
                                  or (isinstance(b, int) and b <= 0)):
                raise PlanError(f"checkpoint[{i}]: want null, \"none\", \"min\", a positive "
                                f"byte count or a size such as \"2GiB\" (got {b!r})")
        m = self.memory
        if m is not None and (isinstance(m, bool) or not isinstance(m, int | str)
                              or (isinstance(m, int) and m <= 0) or m == ""):
            raise PlanError(f"memory: want null, a positive byte count or a size such as "
                            f"\"8GiB\" (got {m!r})")
        if m is not None and any(b is not None for b in self.checkpoint):
            raise PlanError(f"memory and checkpoint: give one (memory {m!r}: parallelize plans "
                            f"the activations within it less the rank's fixed part; checkpoint "
                            f"{list(self.checkpoint)}: the activation budget itself)")

    @property
    def world(self) -> int:
        """The processes it runs on: ``pp * dp * tp``."""
        return self.pp * self.dp * self.tp

    @property
    def mesh_shape(self) -> dict[str, int]:
        """``{"pp": .., "dp": .., "tp": ..}``."""
        return {d: getattr(self, d) for d in DIMS}

    def budget(self, stage: int) -> Budget:
        """Stage ``stage``'s checkpointing budget; None where it does not checkpoint."""
        b = self.checkpoint[stage if len(self.checkpoint) > 1 else 0]
        return None if b == "none" else b

    def to_dict(self) -> dict[str, Any]:
        """The JSON object (module docstring); :meth:`from_dict` reads it back. ``memory``
        only where it is set (the advisors' ``launch`` object has no such field)."""
        out: dict[str, Any] = {"mesh": self.mesh_shape, "microbatch": self.microbatch,
                               "microbatches": self.microbatches, "cuts": list(self.cuts),
                               "checkpoint": list(self.checkpoint)}
        if self.memory is not None:
            out["memory"] = self.memory
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, obj: object, where: str = "") -> LaunchCandidate:
        """Read the JSON object; an unknown field is refused by name (a misspelt
        ``microbatchs`` would otherwise launch the default)."""
        try:
            f = Fields(obj, where)
            known = {"mesh", "microbatch", "microbatches", "cuts", "checkpoint", "memory"}
            unknown = sorted(set(f.obj) - known)
            if unknown:
                raise PlanError(f"{f.path(unknown[0])}: unknown field (a launch candidate has "
                                f"{', '.join(sorted(known))})")
            mesh = f.object("mesh")
            if mesh is None:
                raise PlanError(f"{f.path('mesh')}: missing (want {{\"pp\", \"dp\", \"tp\"}})")
            bad = sorted(set(mesh.obj) - set(DIMS))
            if bad:
                raise PlanError(f"{mesh.path(bad[0])}: unknown mesh dimension (want pp, dp "
                                f"or tp)")
            ck = f.obj.get("checkpoint")
            budgets = tuple(ck) if isinstance(ck, list) else (ck,)
            return cls(pp=mesh.integer("pp", 1), dp=mesh.integer("dp", 1),
                       tp=mesh.integer("tp", 1), microbatch=f.integer("microbatch", 1),
                       microbatches=f.integer("microbatches", 1),
                       cuts=tuple(int(c) for c in f.integers("cuts")), checkpoint=budgets,
                       memory=f.obj.get("memory"))
        except ScheduleError as err:  # Fields' errors: the same message, the launcher's type
            raise PlanError(str(err)) from err

    @classmethod
    def from_search3d(cls, obj: object, where: str = "") -> LaunchCandidate:
        """A candidate of a ``chainplan.search3d/v1`` document (one of its ``candidates``):
        its ``launch`` object where it carries one, else read from its fields: ``pp``,
        ``dp``, ``tmp``, ``mbs`` (micro-batch), ``gas`` (micro-batches), its stages' last
        layers (cuts) and rotor's ``checkpoint.budget_bytes`` of each stage it checkpoints."""
        try:
            f = Fields(obj, where)
            launch = f.object("launch")
            if launch is not None:
                return cls.from_dict(launch.obj, launch.where)
            stages = f.objects("stages")
            budgets: list[Budget] = []
            for s in stages:
                ck = s.object("checkpoint")
                budgets.append(ck.integer("budget_bytes", low=1) if ck is not None else None)
            return cls(pp=f.integer("pp", low=1), dp=f.integer("dp", low=1),
                       tp=f.integer("tmp", low=1), microbatch=f.integer("mbs", low=1),
                       microbatches=f.integer("gas", low=1),
                       cuts=tuple(s.integer("last_layer", low=1) for s in stages[:-1]),
                       checkpoint=tuple(budgets) or (None,))
        except ScheduleError as err:
            raise PlanError(str(err)) from err

    @classmethod
    def from_json(cls, text: str, where: str = "") -> LaunchCandidate:
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as err:
            raise PlanError(f"{where or 'the candidate'}: not JSON ({err})") from err
        return cls.from_dict(obj, where)
