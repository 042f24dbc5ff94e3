"""The operation-level options of a captured stage, computed and measured at profile time.

For a stage cut from a captured graph, :func:`stage_options` maps the tensors autograd saves
to the graph's nodes (:mod:`chainplan.graph.packs`), times each node, hands the graph to the
Go side (``planner/stageopt``: keeping nothing, and the best kept sets at a few memory
budgets between, by an exact ILP on HiGHS or a documented greedy for large stages) and then
measures every option it returns as the executor runs it (:mod:`chainplan.graph.partial`):
what the first forward keeps (the option's ā, its output included) and its temporary peak,
and the time and temporary peak of the recomputation right before the backward. The chain
carries the measured figures (``options`` of chainplan.chain/v2), so each option is exact
for its stage; the planner (``rotor-ops``) picks one per stage.

Stages of identical structure (a transformer's blocks) share their options: they are
computed and measured once per structure and input shape.
"""

from __future__ import annotations

import hashlib
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

import torch
from torch import fx

from chainplan import _bind
from chainplan.graph.packs import PackMap, call, supported
from chainplan.graph.partial import OptionProgram
from chainplan.graph.stage import GraphStage
from chainplan.profiler.memory import MemoryProbe
from chainplan.runtime.recompute import frozen_buffers
from chainplan.runtime.saved import StageSaves, buffer_storages, dropping

__all__ = ["graph_of", "stage_options", "structure_key"]

# Options of stages already measured, by structure_key: a transformer's blocks share them.
_MEASURED: dict[str, list[dict[str, Any]]] = {}


def structure_key(stage: GraphStage, x: torch.Tensor) -> str:
    """A digest of the stage's graph up to node names, with its input's shape and dtype:
    equal for the identical blocks of a model."""
    pos = {n: i for i, n in enumerate(stage.gm.graph.nodes)}

    def arg(a: Any) -> Any:
        return ("n", pos[a]) if isinstance(a, fx.Node) else repr(a)

    parts = [str(tuple(x.shape)), str(x.dtype), str(x.requires_grad)]
    for n in stage.gm.graph.nodes:
        val = n.meta.get("val")
        meta = (tuple(val.shape), str(val.dtype)) if isinstance(val, torch.Tensor) else None
        parts.append(repr((n.op, str(n.target), fx.node.map_aggregate(n.args, arg),
                           fx.node.map_aggregate(dict(n.kwargs), arg), meta)))
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def _node_times(pm: PackMap, args: list[Any], repeats: int,
                sync: Callable[[], None]) -> dict[int, float]:
    """The median time of each operation of the graph, run alone without gradients."""
    times: dict[int, list[float]] = {}
    for _ in range(repeats):
        env: dict[fx.Node, Any] = {}
        placeholders = iter(args)
        with torch.no_grad():
            for i, n in enumerate(pm.nodes):
                if n.op == "placeholder":
                    env[n] = next(placeholders)
                    continue
                if n.op == "output":
                    break
                a = fx.node.map_arg(n.args, env.__getitem__)
                kw = fx.node.map_arg(n.kwargs, env.__getitem__)
                sync()
                t0 = time.perf_counter()
                env[n] = call(n, a, kw)
                sync()
                times.setdefault(i, []).append(time.perf_counter() - t0)
    return {i: statistics.median(v) for i, v in times.items()}


def graph_of(pm: PackMap, times: dict[int, float]) -> dict[str, Any]:
    """The stage's graph as ``planner/stageopt`` reads it (``stageopt.Graph``)."""
    pos = {n: i for i, n in enumerate(pm.nodes)}
    saved = {p.alias for p in pm.packs if p.alias >= 0}
    internal: dict[int, int] = {}
    for p in pm.packs:
        if p.alias < 0:
            count = 1
            for d in p.size:
                count *= d
            internal[p.owner] = internal.get(p.owner, 0) + count * p.dtype.itemsize
    out_root = pm.root.get(pm.output, pm.output)
    nodes = []
    for i, n in enumerate(pm.nodes):
        if n.op == "output":
            break
        own = pm.root.get(i) == i
        nodes.append({
            "time": times.get(i, 0.0),
            "bytes": pm.nbytes.get(i, 0) if own else 0,
            "internal": internal.get(i, 0),
            "inputs": [pos[u] for u in n.all_input_nodes],
            "source": n.op == "placeholder",
            "output": i in (pm.output, out_root),
            "saved": own and i in saved,
        })
    return {"nodes": nodes}


def _measure(stage: GraphStage, x: torch.Tensor, program: OptionProgram, repeats: int,
             dev: torch.device, sync: Callable[[], None]) -> dict[str, Any]:
    """The option's figures as the executor runs it (module docstring)."""
    keep_storages = buffer_storages(stage)

    def forward() -> tuple[StageSaves, torch.Tensor]:
        saves = StageSaves(0, lambda _k: None)
        with torch.enable_grad(), dropping(saves, keep_storages, program.mask):
            out = stage(x)
        return saves, out

    with MemoryProbe(device=dev) as fwd:
        saves, out = forward()
    kept, fwd_peak = fwd.delta_bytes, fwd.peak_bytes
    del out
    with MemoryProbe(device=dev) as rec, frozen_buffers(stage):
        program.run(stage.inputs(x), saves)
    rec_tmp = max(0, rec.peak_bytes - rec.delta_bytes)
    del saves
    times = []
    for _ in range(repeats):
        saves, out = forward()
        del out
        with frozen_buffers(stage):
            sync()
            t0 = time.perf_counter()
            program.run(stage.inputs(x), saves)
            sync()
        times.append(time.perf_counter() - t0)
        del saves
    return {"saved_bytes": kept, "fwd_tmp_bytes": max(0, fwd_peak - kept, rec_tmp),
            "recompute_time": statistics.median(times), "keep": sorted(program.keep)}


def stage_options(stage: torch.nn.Module, x: torch.Tensor, *, repeats: int,
                  dev: torch.device) -> str | None:
    """The measured options of ``stage`` for the input ``x``, as the ``options_json`` of a
    profile row (``None`` when the stage has none: not a captured stage, an in-place
    update, nothing worth keeping apart). The caller restores buffers and random streams.
    """
    if not isinstance(stage, GraphStage) or not supported(stage.gm):
        return None

    x = x.detach().requires_grad_(x.is_floating_point() or x.is_complex())
    key = structure_key(stage, x)
    found = _MEASURED.get(key)
    if found is None:
        sync = (lambda: torch.cuda.synchronize(dev)) if dev.type == "cuda" else (lambda: None)
        pm = stage.pack_map(x)
        with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
            times = _node_times(pm, stage.inputs(x), 3, sync)
        result = _bind.stage_options(graph_of(pm, times))
        found = []
        with torch.random.fork_rng(devices=[dev] if dev.type == "cuda" else []):
            for opt in result["options"]:
                program = stage.option_program(tuple(opt["keep"]), x)
                found.append(_measure(stage, x, program, repeats, dev, sync))
        _MEASURED[key] = found
    return json.dumps(found) if found else None
