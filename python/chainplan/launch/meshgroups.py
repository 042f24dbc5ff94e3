"""The process groups of one rank of a ``pp`` x ``dp`` x ``tp`` mesh.

DTensor (tensor parallelism) and FSDP2 take sub-meshes (``mesh["tp"]``, ``mesh["dp"]``);
the pipeline runner and DDP take process groups. The pipeline groups are made here with
the launch's timeout, so that a rank waiting on a dead peer gives up in ``timeout_s`` and
names it (:mod:`chainplan.pipeline.failure`) rather than after the backend's default.
Every rank creates every pipeline group, in the same order, as ``new_group`` requires.

A chainplan plan inside a rank's part is agreed (:mod:`chainplan.agreed`) by the ranks that
hold the same layers and must run them alike: the rank's ``dp`` group, and with ``tp`` > 1
its ``dp`` x ``tp`` ranks of the same pipeline stage, whose tensor-parallel collectives
inside each layer line up only where every rank recomputes the same layers (``plan``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from chainplan.launch.candidate import DIMS, LaunchCandidate

__all__ = ["MeshGroups", "mesh_groups"]


@dataclass
class MeshGroups:
    """This rank's part of the mesh: its sub-meshes (None for a dimension of size 1), its
    ``pp`` and ``dp`` groups (None likewise), the group agreeing its plans (``plan``: the
    ``dp`` group, or with ``tp`` > 1 the stage's ``dp`` x ``tp`` ranks, that one made only
    where the candidate checkpoints; None for one rank),
    the ranks it talks to and its device."""

    mesh: Any
    device: torch.device
    tp_mesh: Any
    dp_mesh: Any
    dp: Any
    pp: Any
    peers: list[int]
    plan: Any = None


def mesh_groups(cand: LaunchCandidate, mesh: Any, timeout: timedelta) -> MeshGroups:
    """Make (when ``mesh`` is None) the mesh of ``cand`` and this rank's groups."""
    from torch.distributed.device_mesh import init_device_mesh

    if mesh is None:
        kind = "cuda" if "nccl" in str(dist.get_backend()) and torch.cuda.is_available() \
            else "cpu"
        mesh = init_device_mesh(kind, (cand.pp, cand.dp, cand.tp), mesh_dim_names=DIMS)
    names = tuple(mesh.mesh_dim_names)
    device = torch.device("cuda", torch.cuda.current_device()) if mesh.device_type == "cuda" \
        else torch.device("cpu")

    def sub(d: str) -> Any:
        return mesh[d] if d in names and mesh.size(names.index(d)) > 1 else None

    tp_mesh, dp_mesh = sub("tp"), sub("dp")
    pp_group = plan_group = None
    rank = dist.get_rank()
    peers: set[int] = set()
    for m in (tp_mesh, dp_mesh):
        if m is not None:
            peers |= set(m.mesh.flatten().tolist())
    backend = "nccl" if device.type == "cuda" else "gloo"
    axis = names.index("pp") if "pp" in names else None
    if axis is not None and cand.pp > 1:
        grid = mesh.mesh.movedim(axis, -1).reshape(-1, cand.pp)
        for row in grid.tolist():  # every rank creates every group
            g = dist.new_group(ranks=row, timeout=timeout, backend=backend)
            if rank in row:
                pp_group = g
                peers |= set(row)
    dp_group = dp_mesh.get_group() if dp_mesh is not None else None
    checkpoints = cand.memory is not None or any(cand.budget(k) is not None
                                                 for k in range(cand.pp))
    if tp_mesh is None:
        plan_group = dp_group
    elif dp_mesh is None:
        plan_group = tp_mesh.get_group()
    elif checkpoints:  # each pipeline stage's dp x tp ranks (made only where a plan needs it)
        stages = mesh.mesh.movedim(axis, 0) if axis is not None else mesh.mesh[None]
        for block in stages:  # every rank creates every group
            ranks = block.flatten().tolist()
            g = dist.new_group(ranks=ranks, backend=backend)
            if rank in ranks:
                plan_group = g
    return MeshGroups(mesh=mesh, device=device, tp_mesh=tp_mesh, dp_mesh=dp_mesh,
                      dp=dp_group, pp=pp_group, peers=sorted(peers - {rank}),
                      plan=plan_group)
