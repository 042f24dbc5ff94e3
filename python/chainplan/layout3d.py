"""Where each process of a 3-D strategy works, for the training script that runs it.

A :class:`~chainplan.advice.Candidate3D` lists, per pipeline stage, its devices in the order
``devices[d*tmp + t]`` (replica ``d`` of ``dp``, tensor shard ``t`` of ``tmp``). A training
launched with one process per device (``torchrun``: the process's rank is the device
index) needs the reverse: given its rank, which stage, which layers, and which process
groups it joins. Three kinds of groups partition the ranks:

* **tensor** groups: the ``tmp`` devices of one replica of one stage (they split its
  layers' weights, Megatron's all-reduces run there);
* **data** groups: the ``dp`` devices that hold the same shard of the same stage (its
  gradients are all-reduced there);
* **pipeline** groups: the ``pp`` devices, one per stage, that pass one replica's
  activations from stage to stage.

``torch.distributed.new_group`` must be called by every process for every group, in the
same order: :func:`process_groups` gives them all in a fixed order, :func:`rank_layout` the
ones a rank belongs to. This module never imports torch.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from chainplan.errors import PlanError

__all__ = ["RankLayout", "ProcessGroups", "rank_layout", "process_groups"]


class _Stage(Protocol):
    """What the layout reads of a stage (:class:`~chainplan.advice.Stage3D`)."""

    @property
    def devices(self) -> tuple[int, ...]: ...
    @property
    def first_layer(self) -> int: ...
    @property
    def last_layer(self) -> int: ...


class _Candidate(Protocol):
    """What the layout reads of a candidate (:class:`~chainplan.advice.Candidate3D`,
    which imports this module: the layout depends on the shape, not on the class)."""

    @property
    def index(self) -> int: ...
    @property
    def pp(self) -> int: ...
    @property
    def dp(self) -> int: ...
    @property
    def tmp(self) -> int: ...
    @property
    def devices(self) -> int: ...
    @property
    def stages(self) -> Sequence[_Stage]: ...


@dataclass(frozen=True)
class ProcessGroups:
    """Every group of a candidate, each a tuple of ranks; every rank is in exactly one group
    of each kind. Tensor groups are listed stage by stage, replica by replica; data groups
    stage by stage, shard by shard; pipeline groups replica by replica, shard by shard."""

    tensor: tuple[tuple[int, ...], ...]
    data: tuple[tuple[int, ...], ...]
    pipeline: tuple[tuple[int, ...], ...]


@dataclass(frozen=True)
class RankLayout:
    """What one rank runs.

    Attributes:
        rank: the device index (the process's ``torch.distributed`` rank).
        stage: its pipeline stage, from 0. first_layer, last_layer: the stage's layers
            (1-based, inclusive, as in :class:`~chainplan.advice.Stage3D`).
        data_index: its replica d in 0..dp−1. tensor_index: its shard t in 0..tmp−1.
        tensor_group, data_group, pipeline_group: the ranks of its three groups (itself
            included); ``pipeline_group[s]`` runs stage s.
        previous_rank, next_rank: its neighbours in the pipeline (None at the ends).
    """

    rank: int
    stage: int
    first_layer: int
    last_layer: int
    data_index: int
    tensor_index: int
    tensor_group: tuple[int, ...]
    data_group: tuple[int, ...]
    pipeline_group: tuple[int, ...]
    previous_rank: int | None
    next_rank: int | None


def _grid(c: _Candidate) -> list[tuple[int, ...]]:
    """The stages' device lists, checked: pp stages of dp·tmp devices, every device of
    0..pp·dp·tmp−1 exactly once."""
    if len(c.stages) != c.pp:
        raise PlanError(f"candidate {c.index}: {len(c.stages)} stages listed, pp is {c.pp}")
    width = c.dp * c.tmp
    seen: set[int] = set()
    for s, st in enumerate(c.stages):
        if len(st.devices) != width:
            raise PlanError(f"candidate {c.index}: stage {s} lists {len(st.devices)} devices, "
                            f"want dp·tmp = {width}")
        for dev in st.devices:
            if not 0 <= dev < c.devices or dev in seen:
                raise PlanError(f"candidate {c.index}: stage {s} lists device {dev}, want each "
                                f"of 0..{c.devices - 1} once")
            seen.add(dev)
    return [st.devices for st in c.stages]


def process_groups(c: _Candidate) -> ProcessGroups:
    """Every tensor, data and pipeline group of ``c`` (module docstring).

    Raises:
        PlanError: the candidate's stages do not list each device once, dp·tmp per stage.
    """
    grid = _grid(c)
    tensor = tuple(grid[s][d * c.tmp:(d + 1) * c.tmp] for s in range(c.pp) for d in range(c.dp))
    data = tuple(tuple(grid[s][d * c.tmp + t] for d in range(c.dp))
                 for s in range(c.pp) for t in range(c.tmp))
    pipeline = tuple(tuple(grid[s][d * c.tmp + t] for s in range(c.pp))
                     for d in range(c.dp) for t in range(c.tmp))
    return ProcessGroups(tensor=tensor, data=data, pipeline=pipeline)


def rank_layout(c: _Candidate, rank: int) -> RankLayout:
    """Where ``rank`` works in ``c``: its stage and layers, its replica and shard, its
    groups and pipeline neighbours.

    Raises:
        PlanError: ``rank`` is not one of the candidate's devices, or the candidate's
            stages do not list each device once.
    """
    grid = _grid(c)
    if isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank < c.devices:
        raise PlanError(f"rank {rank!r} is not a device of candidate {c.index} "
                        f"(want 0..{c.devices - 1}: pp·dp·tmp = {c.pp}·{c.dp}·{c.tmp})")
    s = next(i for i, devs in enumerate(grid) if rank in devs)
    d, t = divmod(grid[s].index(rank), c.tmp)
    pipe = tuple(grid[j][d * c.tmp + t] for j in range(c.pp))
    return RankLayout(
        rank=rank, stage=s, first_layer=c.stages[s].first_layer,
        last_layer=c.stages[s].last_layer, data_index=d, tensor_index=t,
        tensor_group=grid[s][d * c.tmp:(d + 1) * c.tmp],
        data_group=tuple(grid[s][k * c.tmp + t] for k in range(c.dp)),
        pipeline_group=pipe,
        previous_rank=pipe[s - 1] if s > 0 else None,
        next_rank=pipe[s + 1] if s + 1 < c.pp else None)
