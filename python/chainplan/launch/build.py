"""``chainplan.parallelize``: one candidate built on a ``DeviceMesh`` (docs/distributed.md).

The order is torchtitan's: tensor parallelism on ``tp`` (:mod:`.tensorparallel`), chainplan
checkpointing inside each rank's part, compile, then data parallelism on ``dp`` (FSDP2's
``fully_shard`` on each block and the root, or DDP); with ``pp`` > 1 the chain is cut
into stages that the pipeline runner executes on the rank's ``pp`` group
(:mod:`.stageplan`), one pipeline per data-parallel replica, each chain layer sharded by
FSDP2 over ``dp`` or the gradients averaged over it after each step (DDP's mean).

Everything that can be refused is refused before the first collective, on every rank alike
(it depends only on the model, the candidate and the world size): a mesh or candidate that
does not match the world size, a model tensor parallelism cannot split, cuts past the
chain, combinations this release does not build.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from datetime import timedelta
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import fully_shard

from chainplan.checkpointed import Checkpointed
from chainplan.errors import PlanError
from chainplan.graph.chain import extract
from chainplan.graph.split import declared
from chainplan.launch.candidate import DIMS, Budget, LaunchCandidate
from chainplan.launch.meshgroups import mesh_groups
from chainplan.launch.rankplan import activation_budget, candidate_memory
from chainplan.launch.run import Parallelized
from chainplan.launch.stageplan import cuts_plan, staged_chain
from chainplan.launch.tensorparallel import apply_tp, tp_plan
from chainplan.pipeline.document import PipelineDocument
from chainplan.pipeline.runner import PipelineRunner
from chainplan.sequential import flatten_stages

__all__ = ["parallelize"]

DataParallel = Literal["fsdp", "ddp"]
_ids = itertools.count()


def parallelize(model: nn.Module, mesh: Any = None, candidate: LaunchCandidate | Mapping[str, Any]
                | None = None, *, loss_fn: Any = None, data_parallel: DataParallel = "fsdp",
                compile: bool = False, plan: PipelineDocument | None = None,
                example: Any = None, example_kwargs: dict[str, Any] | None = None,
                optimizer: str = "adamw", timeout_s: float = 300.0) -> Parallelized:
    """Build ``model`` for this rank of ``mesh`` as ``candidate`` says.

    Call it on every rank, after ``torch.distributed.init_process_group``, with the model
    built alike on every rank (same seed). The model is changed in place.

    Args:
        model: the model as written: a transformer whose blocks tensor parallelism
            recognises (or a HuggingFace model with ``base_model_tp_plan``) when ``tp`` > 1;
            an ``nn.Sequential``, or any model with ``example``, when ``pp`` > 1.
        mesh: a ``DeviceMesh`` whose dimensions are named among ``pp``, ``dp``, ``tp``
            (a missing one is 1); None: made from the candidate's mesh, on CUDA when the
            process group's backend is NCCL, else the CPU.
        candidate: a :class:`~chainplan.launch.candidate.LaunchCandidate` or its JSON
            object (None: the mesh's shape, one micro-batch, no checkpointing).

    Keyword Args:
        loss_fn: ``loss_fn(output, target)``, mean-reduced (default: the mean square).
        data_parallel: ``fsdp`` (FSDP2's ``fully_shard``, default) or ``ddp``.
        compile: ``torch.compile`` the rank's model (``pp`` = 1).
        plan: with ``pp`` > 1, a pipeline plan of the Go planner
            (:func:`chainplan.pipeline.pipeline_plan`, ``algo="contiguous"``) to run instead of the
            candidate's cuts: its stages' recomputation and its memory per rank, which
            ``runner.measure`` checks each rank's peak against. Its stages must be the
            candidate's cuts, one per rank of the ``pp`` group.
        example, example_kwargs: one micro-batch's call, for a model that is not an
            ``nn.Sequential`` cut into pipeline stages.
        optimizer: the optimizer's name (``"adamw"``, default; ``"adam"``,
            ``"sgd-momentum"``, ``"sgd"``, ``"none"``): with the candidate's ``memory``, its
            state per parameter counts in the rank's fixed part (:mod:`.rankplan`).
        timeout_s: how long a rank of a pipeline waits for a peer before it gives up,
            naming it (the pipeline groups are made with it; the ``dp`` and ``tp`` groups
            of the mesh have the process group's timeout, ``init_process_group(timeout=)``;
            a peer that died is seen at once by the connection it closed).

    Returns:
        A :class:`~chainplan.launch.run.Parallelized` whose ``step`` trains one batch.

    Raises:
        PlanError: what is refused (module docstring), naming the field or the block.
        InfeasibleBudget: the candidate's ``memory`` does not hold what the rank holds
            besides activations (the figures and the terms in the message).
    """
    if not dist.is_available() or not dist.is_initialized():
        raise PlanError("parallelize runs in a process group: call "
                        "torch.distributed.init_process_group first (torchrun sets what it needs)")
    world = dist.get_world_size()
    cand = _candidate(candidate, mesh)
    if cand.world != world:
        raise PlanError(f"the candidate's mesh {cand.mesh_shape} holds {cand.world} processes "
                        f"but the process group has {world} (launch {cand.world})")
    if data_parallel not in ("fsdp", "ddp"):
        raise PlanError(f"data_parallel: want 'fsdp' or 'ddp' (got {data_parallel!r})")
    budgets = [cand.budget(k) for k in range(cand.pp)]
    memory = None
    if cand.memory is not None:  # the activations planned within it less the fixed part
        memory = candidate_memory(model, cand, data_parallel, optimizer,
                                  _unit_names(model, sharded_root_only=isinstance(
                                      model, nn.Sequential)))
        budgets = [activation_budget(memory, cand)]
    _refuse(cand, budgets, data_parallel, compile, chain=isinstance(model, nn.Sequential),
            model_name=type(model).__name__)
    if plan is not None:
        _check_plan(plan, cand, budgets)
    split = tp_plan(model, cand.tp) if cand.tp > 1 else None
    chain: list[nn.Module] = []
    if cand.pp > 1:
        chain, own = _chain(model, example, example_kwargs)
        ck = any(b is not None for b in budgets)
        if cand.cuts[-1] >= len(chain):
            raise PlanError(f"cuts: the last stage starts after layer {cand.cuts[-1]}, but the "
                            f"model's chain has {len(chain)} layers "
                            f"(chainplan.stages(model) lists them)")
        # The runner captures a model cut from its graph after tensor parallelism made
        # its parameters DTensors (which torch.export refuses), and wraps the captured
        # layers itself: nothing of ours can be put around them.
        fsdp = cand.dp > 1 and data_parallel == "fsdp"
        if not own and (ck or fsdp or cand.tp > 1):
            what = ("checkpointing inside stages" if ck else "FSDP under a pipeline" if fsdp
                    else "tp > 1 under a pipeline")
            raise PlanError(f"{what} needs the model's layers declared as an nn.Sequential "
                            f"({type(model).__name__} is cut from its graph, whose layers are "
                            f"the runner's, not the model's); or use data_parallel='ddp', "
                            f"tp 1 and checkpoint null")
    # DDP's mean of the gradients where DDP cannot run: a pipeline's stages, DTensor
    # parameters (FSDP's reduce-scatter averages them itself).
    average = cand.dp > 1 and data_parallel == "ddp" and (cand.pp > 1 or cand.tp > 1)
    # Nothing is refused past this point: the collectives start.
    groups = mesh_groups(cand, mesh, timedelta(seconds=timeout_s))
    device = groups.device
    if split is not None:
        apply_tp(model, split, groups.tp_mesh)
    model.to(device)
    if cand.pp > 1:
        staged: nn.Module = model  # the runner cuts it as it cuts any model
        if ck:
            staged, counts = staged_chain(chain, cand.cuts, budgets, groups.plan,
                                          reuse=cand.tp == 1)
        else:
            counts = [b - a for a, b in zip([0, *cand.cuts], [*cand.cuts, len(chain)],
                                            strict=True)]
        if plan is None:
            plan = cuts_plan(cand.cuts, counts, cand.microbatches)
        if cand.dp > 1 and data_parallel == "fsdp":
            for layer in flatten_stages(staged):  # each a unit: a stage gathers its own
                if any(True for _ in layer.parameters()):
                    fully_shard(layer, mesh=groups.dp_mesh)
        runner = PipelineRunner(plan, staged, microbatches=cand.microbatches, loss_fn=loss_fn,
                                device=device, group=groups.pp, timeout_s=timeout_s,
                                example=example, example_kwargs=example_kwargs)
        return Parallelized(cand, groups, runner=runner, loss_fn=loss_fn, average=average,
                            prefix=f"chainplan/parallelize/{next(_ids)}",
                            timeout_s=timeout_s)
    net: nn.Module = model
    view = None
    # With tp > 1 every rank profiles its layers anew (reuse off): a profile one rank found
    # stored and another did not would have one run the layers' collectives alone.
    if budgets[0] is not None:  # the ranks holding these layers agree on one plan
        net = view = Checkpointed(model, budget=budgets[0], group=groups.plan,
                                  reuse=cand.tp == 1)
    if compile:
        net = torch.compile(net)  # type: ignore[assignment]
    if cand.dp > 1:
        net = _data_parallel(net, model, groups, data_parallel)
    return Parallelized(cand, groups, module=net, loss_fn=loss_fn, average=average,
                        prefix=f"chainplan/parallelize/{next(_ids)}", timeout_s=timeout_s,
                        memory=memory, view=view)


def _candidate(candidate: LaunchCandidate | Mapping[str, Any] | None,
               mesh: Any) -> LaunchCandidate:
    """The candidate, checked against the mesh's named dimensions."""
    if isinstance(candidate, Mapping):
        candidate = LaunchCandidate.from_dict(dict(candidate))
    if mesh is None:
        if candidate is None:
            raise PlanError("parallelize needs a mesh or a candidate (its mesh shape)")
        return candidate
    names = tuple(mesh.mesh_dim_names or ())
    bad = [n for n in names if n not in DIMS]
    if not names or bad:
        raise PlanError(f"the mesh's dimensions must be named among pp, dp, tp "
                        f"(got {list(names) or 'no names'}): "
                        f"init_device_mesh(..., mesh_dim_names=(\"dp\", \"tp\"))")
    shape = {d: (mesh.size(names.index(d)) if d in names else 1) for d in DIMS}
    if candidate is None:
        return LaunchCandidate(pp=shape["pp"], dp=shape["dp"], tp=shape["tp"])
    if candidate.mesh_shape != shape:
        raise PlanError(f"the candidate's mesh {candidate.mesh_shape} is not the mesh's "
                        f"{shape}")
    return candidate


def _refuse(cand: LaunchCandidate, budgets: list[Budget], data_parallel: str,
            compile: bool, *, chain: bool, model_name: str) -> None:
    """Combinations this release does not build, each with why; ``chain``: whether the
    model declares its layers (an ``nn.Sequential``), ``model_name`` its class's name."""
    ck = any(b is not None for b in budgets)
    if ck and cand.tp > 1 and not chain:
        raise PlanError(f"checkpoint with tp > 1 needs the model's layers declared as an "
                        f"nn.Sequential (embedding, *blocks, head), whose layers chainplan "
                        f"plans and runs as written, tensor parallelism's hooks inside them; "
                        f"{model_name} would be captured with torch.export, which does not "
                        f"capture DTensor parameters: declare it so, or run tp > 1 with "
                        f"checkpoint null")
    if ck and cand.tp > 1 and compile:
        raise PlanError("checkpoint with compile and tp > 1: a plan does not run under "
                        "torch.compile around tensor-parallel layers yet; leave compile off")
    if ck and cand.pp > 1 and cand.dp > 1 and data_parallel == "fsdp":
        raise PlanError("checkpoint with data_parallel='fsdp' and pp > 1: a checkpointed stage "
                        "under fully_shard is not built yet; use data_parallel='ddp'")
    if ck and compile and cand.dp > 1 and data_parallel == "fsdp":
        raise PlanError("checkpoint with compile and data_parallel='fsdp': a plan does not run "
                        "under torch.compile between it and fully_shard yet; leave compile "
                        "off or use data_parallel='ddp'")
    if cand.pp > 1 and compile:
        raise PlanError("compile with pp > 1 is not built yet: the pipeline runner runs the "
                        "stages as written")
    if cand.pp == 1 and cand.cuts:
        raise PlanError("cuts: want none for one pipeline stage")


def _check_plan(plan: PipelineDocument, cand: LaunchCandidate, budgets: list[Budget]) -> None:
    """A pipeline plan given with the candidate must be the candidate's pipeline."""
    if plan.gpus != cand.pp:
        raise PlanError(f"the pipeline plan was made for {plan.gpus} ranks but the candidate's "
                        f"mesh has pp={cand.pp} (plan for gpus={cand.pp})")
    if len(plan.stages) != cand.pp:
        raise PlanError(f"the pipeline plan has {len(plan.stages)} stages on {plan.gpus} ranks: "
                        f"parallelize runs one stage per rank (plan with algo='contiguous')")
    ends = tuple(s.last for s in plan.stages[:-1])
    if ends != cand.cuts:
        raise PlanError(f"cuts: the candidate cuts after layers {list(cand.cuts)} but the plan's "
                        f"stages end at {list(ends)}")
    if any(b is not None for b in budgets):
        raise PlanError("checkpoint: the plan's stages say how they recompute; leave the "
                        "candidate's checkpoint null when a plan is given")


def _chain(model: nn.Module, example: Any,
           example_kwargs: dict[str, Any] | None) -> tuple[list[nn.Module], bool]:
    """The model's chain of layers, as the pipeline runner cuts it, and whether they are
    the model's own (a declared ``nn.Sequential``) rather than cut from its graph."""
    args = () if example is None else (example if isinstance(example, tuple) else (example,))
    if isinstance(model, nn.Sequential) and declared(model, args[1:], dict(example_kwargs or {})):
        return flatten_stages(model), True
    if not args:
        raise PlanError(f"{type(model).__name__} is not an nn.Sequential: cutting it into "
                        f"pipeline stages needs one micro-batch's call (example=...)")
    return list(extract(model, args, dict(example_kwargs or {})).stages), False


def _data_parallel(net: nn.Module, model: nn.Module, groups: Any, how: str) -> nn.Module:
    if how == "ddp":
        if groups.tp_mesh is not None:
            return net  # DTensor parameters: Parallelized averages their gradients itself
        from torch.nn.parallel import DistributedDataParallel

        return DistributedDataParallel(net, process_group=groups.dp)
    # A checkpointed nn.Sequential runs its layers as the plan's stages, profiled at the
    # first forward: as FSDP units they would be resharded under the profiler, so the
    # root alone is the unit there, gathered for the step as a graph's view holds them.
    if not (isinstance(net, Checkpointed) and isinstance(model, nn.Sequential)):
        for block in _blocks(model):
            fully_shard(block, mesh=groups.dp_mesh)
    # The root is the outermost module, a Checkpointed wrapper included: its planned view
    # then runs with every unit gathered for the step (executors/fsdp.py).
    fully_shard(net if isinstance(net, Checkpointed) else model, mesh=groups.dp_mesh)
    return net


def _unit_names(model: nn.Module, *, sharded_root_only: bool) -> list[str]:
    """The module paths :func:`_data_parallel` gives ``fully_shard`` below the root (none
    for a checkpointed ``nn.Sequential``, sharded at the wrapper alone)."""
    if sharded_root_only:
        return []
    names = {id(m): n for n, m in model.named_modules()}
    return [names[id(b)] for b in _blocks(model)]


def _blocks(model: nn.Module) -> Iterator[nn.Module]:
    """The repeated blocks FSDP wraps one by one: the children of the model's largest
    ``ModuleList`` or ``nn.Sequential``."""
    lists = [m for m in model.modules() if isinstance(m, nn.ModuleList | nn.Sequential)]
    if lists:
        yield from max(lists, key=len).children()
