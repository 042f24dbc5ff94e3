"""Running a plan under the user's ``fully_shard`` (FSDP2): every unit gathered for the step.

torchtitan's order wraps first and shards after: ``net = Checkpointed(model)`` (or
``plan.wrap(model)``), then ``fully_shard`` on every block and on ``net``. FSDP2 then drives
its collectives from module hooks: a unit's pre-forward hook all-gathers its parameters,
its post-forward hook reshards them and hooks its outputs for backward, where the unit is
gathered again and its gradients reduce-scattered. chainplan's executors do not call the
blocks' ``forward``: they run stages cut from the model's graph, which read the parameters
by name at each call. Without help the capture meets the blocks' sharded DTensor
parameters (``torch.export`` refused them: "DTensor ... is not tracked with proxy") and the
stages would compute with shards.

So a planned view's training forward, when the model holds FSDP units, runs inside
:func:`gathered_units`:

* the world size and each unit's shard group are checked against the plan's
  (:mod:`chainplan.sharded`, a ``RankPlan``) before any collective;
* every FSDP unit not yet gathered is all-gathered (the root already is: its pre-forward
  hook ran), in module order, the same on every rank;
* FSDP's forward hooks are set aside while the plan runs, so the capture traces the blocks'
  computation on their gathered parameters, and the stages read those (their gradients
  accumulate into the unsharded parameters, as FSDP's own backward does);
* the root's post-forward hook still runs (it is outside the view's ``forward``): it hooks
  the outputs, and at the end of backward FSDP's final callback runs ``post_backward`` for
  every unit whose backward hooks did not fire, which reduce-scatters their gradients and
  reshards them. Gradients are then FSDP2's, computed on the same gathered parameters.

Since every rank holds its units gathered for the whole step, ranks may run different
plans (a ``RankPlan`` each) without changing the collectives, and a recomputation gathers
nothing; a ``Checkpointed`` view runs one plan on every rank of the units' group, made
once (:mod:`chainplan.agreed`, its group found by :func:`fsdp_group`). The memory
this costs is :func:`chainplan.sharded.rank_memory`'s ``gathered="step"``. Grouped
units (``fully_shard([a, b])``) and a mixed-precision policy (FSDP's cast of the root's
inputs and parameters) are refused: the stages would compute in another dtype than
FSDP's units.

``set_gathering(net, "stage")`` chooses the other mode for a model cut from its graph:
each unit gathered only around the stages that read it (:mod:`chainplan.executors.fsdpstage`,
``rank_memory(gathered="stage")``); every rank must then run the same plan, which the
first step checks (``Checkpointed``'s ranks agree on one: :mod:`chainplan.agreed`).
"""

from __future__ import annotations

import contextlib
import sys
import weakref
from collections import OrderedDict
from collections.abc import Iterator
from typing import Any

from torch import nn

from chainplan.errors import PlanError
from chainplan.executors.checkpoint import CheckpointedChain
from chainplan.executors.fsdpstage import StageGathering
from chainplan.executors.planned import plain_model
from chainplan.graph.call import training_call
from chainplan.graph.chain import input_key

__all__ = ["GATHERINGS", "expect_world", "fsdp_group", "fsdp_units", "gathered_units",
           "gathering", "set_gathering"]

#: What a RankPlan's wrap expects of the model's units: (world, shard), by plain model.
_expected: weakref.WeakKeyDictionary[nn.Module, tuple[int, int]] = weakref.WeakKeyDictionary()

#: How a planned view's FSDP units are gathered: for the whole step, or per stage.
GATHERINGS = ("step", "stage")
_gathering: weakref.WeakKeyDictionary[nn.Module, str] = weakref.WeakKeyDictionary()


def set_gathering(net: nn.Module, mode: str) -> None:
    """How the planned view ``net`` (or its plain model) gathers its FSDP units in training:
    ``"step"`` (the default: every unit for the whole step, module docstring) or
    ``"stage"`` (each unit around the stages that read it; every rank must run the same
    plan: :mod:`chainplan.executors.fsdpstage`).

    Raises:
        PlanError: another mode.
    """
    if mode not in GATHERINGS:
        raise PlanError(f"gathering must be one of {', '.join(GATHERINGS)} (got {mode!r})")
    _gathering[_plain(net)] = mode


def gathering(net: nn.Module) -> str:
    """The gathering mode of the planned view ``net`` (``"step"`` unless set)."""
    return _gathering.get(_plain(net), "step")


def _plain(net: nn.Module) -> nn.Module:
    return plain_model(net)


def expect_world(model: nn.Module, world: int, shard: int) -> None:
    """Record that ``model`` runs a plan made for ``world`` ranks sharding over ``shard``."""
    _expected[model] = (world, shard)


def fsdp_units(model: nn.Module) -> list[tuple[nn.Module, Any]]:
    """The modules of ``model`` (itself included) that ``fully_shard`` hooked, with their
    FSDP state, in module order. A planned view shares its hooks with its plain model, so
    the root is found through either."""
    # Only a process that sharded something has FSDP2 loaded: others pay one lookup.
    loaded = sys.modules.get("torch.distributed.fsdp._fully_shard._fsdp_state")
    if loaded is None:
        return []
    FSDPState = loaded.FSDPState  # noqa: N806 (a class)
    from torch.distributed._composable_state import _get_module_state

    out = []
    for m in model.modules():
        owners = {getattr(h, "__self__", None) for h in m._forward_pre_hooks.values()}
        owners.add(_get_module_state(m))  # a group's modules: their hooks are closures
        states = [s for s in owners if isinstance(s, FSDPState)]
        if states:
            out.append((m, states[0]))
    return out


def fsdp_group(model: nn.Module) -> Any:
    """The process group of the ranks holding ``model`` alike under ``fully_shard``: its
    units' mesh's group (one dimension), or every rank for a mesh of several dimensions
    (HSDP) over the whole world. None: no FSDP unit, or a mesh of several dimensions over
    part of the world, whose group of every dimension at once fully_shard does not make
    (``Checkpointed(..., group=)`` gives it)."""
    import torch.distributed as dist

    for _, state in fsdp_units(model):
        for group in state._fsdp_param_groups:
            mesh = group.mesh_info.mesh
            if mesh.ndim == 1:
                return mesh.get_group()
            return dist.group.WORLD if mesh.size() == dist.get_world_size() else None
    return None


@contextlib.contextmanager
def gathered_units(model: nn.Module, plain: nn.Module, state: Any = None,
                   call: tuple[tuple[Any, ...], dict[str, Any]] | None = None) -> Iterator[None]:
    """Run a planned forward of ``model`` (the view; ``plain`` its plain model; ``state``
    its :class:`~chainplan.executors.view.Planned` and ``call`` the call's arguments) with
    every FSDP unit gathered, or with ``"stage"`` gathering each around the stages that
    read it, and FSDP's forward hooks set aside (module docstring)."""
    units = fsdp_units(model)
    if not units:
        yield
        return
    _check(model, plain, units)
    if isinstance(plain, nn.Sequential):  # its stages are called: FSDP's hooks run per unit
        yield
        return
    saved = []
    for m, _ in units:
        saved.append((m, m._forward_pre_hooks, m._forward_hooks))
        m._forward_pre_hooks, m._forward_hooks = OrderedDict(), OrderedDict()
    try:
        driver = None
        if gathering(plain) == "stage" and state is not None and call is not None:
            driver = _stage_driver(plain, units, state, call)
        if driver is None:
            for other in _drivers_of.get(plain, ()):
                other.active = False  # a step run with "step" after "stage"
            _gather_all(units)
        else:
            driver.start()
        yield
    finally:
        for m, pre, post in saved:
            m._forward_pre_hooks, m._forward_hooks = pre, post


def _gather_all(units: list[tuple[nn.Module, Any]]) -> None:
    for _, st in units:
        for group in st._fsdp_param_groups:
            if not group.is_unsharded:
                group.unshard()
                group.wait_for_unshard()


#: The stage gathering of each executor (a CheckpointedChain), made at its first step.
_drivers: weakref.WeakKeyDictionary[nn.Module, Any] = weakref.WeakKeyDictionary()
#: The stage gatherings of each plain model's executors.
_drivers_of: weakref.WeakKeyDictionary[nn.Module, list[Any]] = weakref.WeakKeyDictionary()
#: The call keys whose chain each plain model has captured (under a gathered step).
_captured: weakref.WeakKeyDictionary[nn.Module, set[Any]] = weakref.WeakKeyDictionary()
#: The plans every rank was found to share, by plain model (their digests).
_agreed: weakref.WeakKeyDictionary[nn.Module, set[str]] = weakref.WeakKeyDictionary()


def _stage_driver(plain: nn.Module, units: list[tuple[nn.Module, Any]], state: Any,
                  call: tuple[tuple[Any, ...], dict[str, Any]]) -> Any:
    """The :class:`~chainplan.executors.fsdpstage.StageGathering` of this call's executor
    (None: this call runs with every unit gathered, module docstring of fsdpstage)."""
    args, kwargs = call
    key = input_key(plain, *training_call(plain, args, kwargs))
    seen = _captured.setdefault(plain, set())
    if key not in seen:  # the capture (or Checkpointed's profile) reads every parameter
        _gather_all(units)
        seen.add(key)
    got = state.executor(*args, **kwargs)
    chain, net = got if isinstance(got, tuple) else (None, got)
    doc = state.plan_for(*args, **kwargs)
    runs = chain is not None and isinstance(net, CheckpointedChain) and doc is not None
    _same_plan(plain, doc, runs, _plan_group(plain, state))  # before any unit's collective
    if not runs:
        _gather_all(units)  # offloading or declared stages: the step mode
        return None
    driver = _drivers.get(net)
    if driver is None:
        groups, members = [], []
        for m, st in units:
            if m.__dict__ is plain.__dict__:  # the view or its plain model
                continue  # the root: gathered by its own hook for the step
            for group in st._fsdp_param_groups:
                groups.append(group)
                members.append({id(x) for x in m.modules()})
        outside = set()
        epilogue = getattr(chain.outputs, "epilogue", None)
        for r in [*chain.prelude_reads, *getattr(epilogue, "reads", ())]:
            mod = r.owner() if r.kind == "state" and r.owner is not None else None
            outside |= {g for g, ms in enumerate(members) if mod is not None and id(mod) in ms}
        driver = _drivers[net] = StageGathering(list(net.stages), groups, members, outside,
                                                 net.plan.sequence)
        _drivers_of.setdefault(plain, []).append(driver)
        # Stretches and recomputation regions run several stages as one call, past the
        # stages' hooks (which gather their units): run each stage.
        net._stretches = {False: {}, True: {}}
        net._regions = {False: {}, True: {}}
    return driver


def _plan_group(plain: nn.Module, state: Any) -> Any:
    """The group whose ranks must run the same plan: the group a Checkpointed model was
    given, else fully_shard's (:func:`fsdp_group`), else, for an HSDP mesh over part of the
    world (no group of its own), a PlanError on every rank of that mesh: comparing over the
    whole world would wait for ranks holding other layers."""
    import torch.distributed as dist

    given = getattr(state, "group", None)
    group = given if given is not None else fsdp_group(plain)
    if group is None and dist.is_initialized():
        raise PlanError(f"{type(plain).__name__}: gathering FSDP units per stage on a mesh "
                        "of several dimensions over part of the world needs the group of "
                        "its data-parallel ranks: give it as Checkpointed(..., group=), or "
                        "use set_gathering(net, 'step')")
    return group


def _same_plan(plain: nn.Module, doc: Any, runs: bool, group: Any) -> None:
    """Refuse, on every rank of ``group`` (the ranks sharding the model alike,
    :func:`_plan_group`; None: no process group), plans (or executors: ``runs``, whether the
    stages gather) that differ between them (checked once per plan: one
    all_gather_object, before the step's first collective). Not over the whole world: the
    stages of a pipeline hold other layers, and run other plans."""
    import hashlib

    import torch.distributed as dist

    ops = [str(op) for op in doc.sequence] if doc is not None else []
    digest = hashlib.sha256(repr((runs, ops)).encode()).hexdigest()
    agreed = _agreed.setdefault(plain, set())
    if digest in agreed or not dist.is_initialized():
        return
    every: list[Any] = [None] * dist.get_world_size(group)
    dist.all_gather_object(every, digest, group=group)
    differ = [r if group is None else dist.get_global_rank(group, r)
              for r, d in enumerate(every) if d != every[0]]
    if differ:
        raise PlanError(f"{type(plain).__name__}: gathering FSDP units per stage needs the "
                        f"same plan on every rank, and ranks {differ} run another plan than "
                        "their group's first rank: make the plan once and share it, as "
                        "Checkpointed's ranks do in their data-parallel group (or use "
                        "set_gathering(net, 'step'))")
    agreed.add(digest)


def _check(model: nn.Module, plain: nn.Module, units: list[tuple[nn.Module, Any]]) -> None:
    """Refuse, before any collective, what the plan or this composition cannot run."""
    import torch.distributed as dist

    name = type(plain).__name__
    for _, state in units:
        if len(state._modules) > 1:
            raise PlanError(f"{name}: a group of modules sharded together (fully_shard on a "
                            "list) is not supported under a chainplan plan; shard each "
                            "block on its own")
        policy = state._mp_policy
        if policy.param_dtype is not None or policy.reduce_dtype is not None:
            raise PlanError(f"{name}: fully_shard's MixedPrecisionPolicy is not supported "
                            "under a chainplan plan (its stages compute in the parameters' "
                            "dtype); use autocast instead")
    expected = _expected.get(plain)
    if expected is None:
        return
    world, shard = expected
    # The data-parallel ranks are those of the units' mesh (replicas times shards), not the
    # job's: a job's other ranks may hold other pipeline stages or tensor-parallel parts.
    meshes = [g.mesh_info.mesh.size() for _, st in units for g in st._fsdp_param_groups]
    actual = meshes[0] if meshes else dist.get_world_size() if dist.is_initialized() else 1
    if actual != world:
        raise PlanError(f"{name}: the plan was made for {world} data-parallel ranks, and "
                        f"fully_shard's mesh has {actual}: plan again with rank_memory(..., "
                        f"world={actual})")
    for _, state in units:
        for group in state._fsdp_param_groups:
            size = group.mesh_info.shard_mesh_size
            if size != shard:
                raise PlanError(f"{name}: the plan shards parameters over {shard} ranks, "
                                f"and fully_shard shards them over {size}: plan again with "
                                f"rank_memory(..., shard={size})")
