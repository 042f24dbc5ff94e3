"""Where a rank peaks with its FSDP2 units gathered per stage, and what it holds then.

bench/fsdp's GPT (width 128, 4 blocks; tests/graph/models.py), rank 0's plan sent to both
ranks and wrapped with ``RankPlan.wrap`` (``rank_memory(..., gathered="stage")``), every
block and the root ``fully_shard``ed, on 2 spawned gloo ranks. One AdamW step is measured
as the benchmark measures it (the rank's sharded parameters and optimizer state, plus
``MemoryProbe``'s peak over the step), then run again with the CPU allocator's events
recorded and a marker at every gather, release, reduce-scatter and stage boundary of the
per-stage driver (executors/fsdpstage.py). At each marker the script notes what FSDP2 holds
then (the units gathered, the unsharded gradients, the sharded ones, the reduce-scatter
inputs kept in flight); at the step's highest level it prints those, and the rest, which is
the activations. Run from the repository root::

    nice .venv/bin/python bench/fsdp/stagepeak.py [--at 0.0]   # 0: the smallest plan,
                                                               # 1: store-all
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from fixedpart import (  # noqa: E402
    gpt_rank,
    marked_step,
    measure_step,
    recorded_step,
    run_ranks,
)

MiB = 2**20


def _nbytes(t: Any, seen: set[int]) -> int:
    """A tensor's storage bytes, once per storage (FSDP2's gradients are views of one
    buffer per unit)."""
    if t is None:
        return 0
    if hasattr(t, "to_local"):
        t = t.to_local()
    st = t.untyped_storage()
    if st.data_ptr() in seen or not st.nbytes():
        return 0
    seen.add(st.data_ptr())
    return int(st.nbytes())


def _holding(states: list[Any], units: dict[str, int], names: list[str]) -> dict[str, int]:
    """What FSDP2 holds now, by kind, in bytes."""
    gathered = unsharded = sharded = rs = 0
    seen: set[int] = set()
    for name, st in zip(names, states, strict=True):
        for group in st._fsdp_param_groups:
            if group.is_unsharded:
                gathered += units[name]
            for fp in group.fsdp_params:
                if hasattr(fp, "_unsharded_param"):
                    unsharded += _nbytes(fp._unsharded_param.grad, seen)
                sharded += _nbytes(fp.sharded_param.grad, seen)
            for s in group.comm_ctx.reduce_scatter_states:
                rs += _nbytes(s.reduce_scatter_input, seen)
    return {"gathered": gathered, "unsharded grads": unsharded, "sharded grads": sharded,
            "reduce-scatter inputs": rs}


def rank_main(rank: int, world: int, port: int, out: str, at: float) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.fsdp._fully_shard import _fsdp_param_group as group

    import chainplan
    from chainplan.executors import fsdpstage
    from chainplan.profiler.allocevents import MARK_PREFIX, AllocRecorder
    from chainplan.rankpeak import stage_units, step_peak
    from chainplan.sharded import RankPlan, rank_memory

    model, mask, idx, y = gpt_rank(rank, world, port, out)
    units = [f"blocks.{i}" for i in range(len(model.blocks))]
    mem = rank_memory(model, world=world, gathered="stage", units=units)
    box: list[Any] = [None, 0]
    if rank == 0:
        prof = chainplan.profile(model, idx, loss_fn=F.cross_entropy, target=y, repeats=1,
                                 warmup=0, progress=False, spread_warning=None, mask=mask)
        lo = chainplan.plan(prof, budget="min").budget_bytes
        hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
        p = chainplan.plan(prof, budget=lo + int((hi - lo) * at))
        box = [p, step_peak(mem, p, prof, stage_units(prof, mem.units))]
    dist.broadcast_object_list(box, src=0)
    plan, peak = box
    net = RankPlan(plan, mem, peak).wrap(model)
    for block in net.blocks:
        fully_shard(block)
    fully_shard(net)
    names = [*units, ""]
    states = [m._get_fsdp_state() for m in [*net.blocks, net]]  # type: ignore[operator]
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    rec = AllocRecorder()
    marks: list[tuple[str, dict[str, int]]] = []
    marking = [False]

    def mark(name: str) -> None:
        if marking[0]:
            marks.append((name, _holding(states, mem.units, names)))
            rec.mark(MARK_PREFIX + str(len(marks) - 1))

    step = marked_step(net, opt, (idx, mask, y), mark)
    held, measured = measure_step(net, opt, step)
    drv = fsdpstage.StageGathering
    real = {n: getattr(drv, n) for n in ("before_stage", "after_stage", "backward_done",
                                         "_gather", "_release")}
    real_reduce = group.foreach_reduce

    def before_stage(self: Any, k: int, args: Any) -> Any:
        mark(f"{'R' if fsdpstage._in_backward() else 'F'}{k} starts")
        return real["before_stage"](self, k, args)

    def after_stage(self: Any, k: int, out_: Any) -> Any:
        mark(f"{'R' if fsdpstage._in_backward() else 'F'}{k} done")
        return real["after_stage"](self, k, out_)

    def backward_done(self: Any, k: int) -> Any:
        mark(f"B{k} done")
        got = real["backward_done"](self, k)
        mark(f"after B{k} done")
        return got

    def gather(self: Any, which: Any) -> Any:
        got = real["_gather"](self, which)
        mark(f"gathered {sorted(which)}")
        return got

    def release(self: Any, which: Any, forward: bool) -> Any:
        got = real["_release"](self, which, forward)
        mark("released")
        return got

    def reduce(*a: Any, **k: Any) -> Any:
        mark("reduce-scatter")
        got = real_reduce(*a, **k)
        mark("after reduce-scatter")
        return got

    patched = {"before_stage": before_stage, "after_stage": after_stage,
               "backward_done": backward_done, "_gather": gather, "_release": release}
    items = recorded_step(step, rec, marking, [
        *((drv, n, f) for n, f in patched.items()), (group, "foreach_reduce", reduce)])
    level, segments = 0, [["start", {}, 0, 0, 0]]  # name, holding, level, peak, peak's rise
    for it in items:
        if isinstance(it, int):
            level += it
            if level > segments[-1][3]:
                segments[-1][3] = level
        else:
            name, holding = marks[int(it[len(MARK_PREFIX):])]
            segments.append([name, holding, level, level, 0])
    Path(out, f"rank{rank}.json").write_text(json.dumps({
        "measured": measured, "held": held, "fixed": mem.fixed_bytes,
        "terms": mem.terms(), "activations": plan.peak_bytes, "segments": segments,
        "step_peak": peak,
        "sequence": " ".join(f"{op.kind}{op.stage}" for op in plan.sequence)}))
    dist.barrier()
    dist.destroy_process_group()


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--at", type=float, default=0.0,
                    help="the plan's budget, from its smallest (0) to store-all (1)")
    ap.add_argument("--all", action="store_true", help="print every marker's level")
    args = ap.parse_args()
    for r, d in enumerate(run_ranks(rank_main, args.at, "bench-fsdp-stagepeak-")):
        print(f"rank {r}: measured {d['measured'] / MiB:.2f} MiB (state {d['held'] / MiB:.2f}"
              f" + step {(d['measured'] - d['held']) / MiB:.2f}); planned "
              f"{(d['fixed'] + d['activations']) / MiB:.2f} = fixed {d['fixed'] / MiB:.2f} + "
              f"activations {d['activations'] / MiB:.2f}; over the step (rankpeak) "
              f"{d['step_peak'] / MiB:.2f}")
        print(f"  rank_memory: {d['terms']}")
        print(f"  plan: {d['sequence']}")
        top = max(range(len(d["segments"])), key=lambda i: d["segments"][i][3])
        for i, (name, holding, at, peak, _) in enumerate(d["segments"]):
            if args.all or abs(i - top) <= 2:
                fsdp = sum(holding.values())
                print(f"  {'*' if i == top else ' '} {name:22s} level {at / MiB:6.2f} highest "
                      f"{peak / MiB:6.2f} MiB; FSDP holds " + ", ".join(
                          f"{k} {v / MiB:.2f}" for k, v in holding.items())
                      + f"; the rest (activations) {(peak - fsdp) / MiB:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
