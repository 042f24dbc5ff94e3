"""Where a rank's peak is under FSDP2, and what it holds then, against ``rank_memory``.

bench/fsdp's GPT (width 128, 4 blocks; tests/graph/models.py), a plan of each rank's own
profile wrapped (``plan.wrap``), then every block and the root ``fully_shard``ed, on 2
spawned gloo ranks. One AdamW step is measured as the benchmark measures it (the rank's
sharded parameters and optimizer state, plus ``MemoryProbe``'s peak over the step), then
run again with the CPU allocator's events recorded and markers at the forward, the
backward, FSDP2's final callback, each reduce-scatter and the optimizer step: the level of
allocated bytes above the rank's state at each marker and the highest level before the
next. The measured fixed part is the measured peak less the plan's activation peak; the
gap is ``rank_memory(..., gathered="step")``'s fixed part less that. Run from the
repository root::

    nice .venv/bin/python bench/fsdp/fixedpart.py [--at 0.0]   # 0: the smallest plan,
                                                               # 1: store-all
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

SIZE = {"vocab": 2048, "width": 128, "heads": 4, "blocks": 4, "seq": 128, "batch": 4}
MiB = 2**20


def gpt_rank(rank: int, world: int, port: int, out: str) -> tuple[Any, Any, Any, Any]:
    """Join the gloo process group as ``rank`` and build the benchmark's GPT (dropout off)
    and this rank's batch: (model, mask, idx, y). Shared with bench/fsdp/stagepeak.py."""
    import torch
    import torch.distributed as dist
    from torch import nn

    from tests.graph.models import GPT

    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port),
                      CHAINPLAN_DB=str(Path(out, f"db{rank}.sqlite")))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1234)
    s = SIZE
    model = GPT(vocab=s["vocab"], width=s["width"], heads=s["heads"], blocks=s["blocks"],
                seq=s["seq"])
    for m in model.modules():
        if isinstance(m, nn.Dropout):
            m.p = 0.0
    gen = torch.Generator().manual_seed(7 + rank)
    mask = torch.ones(s["seq"], s["seq"], dtype=torch.bool).tril()
    idx = torch.randint(0, s["vocab"], (s["batch"], s["seq"]), generator=gen)
    y = torch.randint(0, s["vocab"], (s["batch"] * s["seq"],), generator=gen)
    return model, mask, idx, y


def marked_step(net: Any, opt: Any, batch: tuple[Any, Any, Any],
                mark: Callable[[str], None]) -> Callable[[], None]:
    """One training step of the benchmark's GPT on ``batch`` (idx, mask, y), calling
    ``mark`` at the forward, the backward, the optimizer step and the end. Shared with
    bench/fsdp/stagepeak.py."""
    import torch.nn.functional as F

    idx, mask, y = batch

    def step() -> None:
        mark("forward")
        loss = F.cross_entropy(net(idx, mask=mask), y)
        mark("backward")
        loss.backward()
        mark("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)
        mark("end")

    return step


def measure_step(net: Any, opt: Any, step: Callable[[], None]) -> tuple[int, int]:
    """A rank's step measured as the benchmark measures it: (held, measured), the rank's
    sharded parameters and optimizer state, and those plus ``MemoryProbe``'s peak over a
    step. Runs ``step`` three times. Shared with bench/fsdp/stagepeak.py."""
    from chainplan.profiler.memory import MemoryProbe
    from chainplan.sharded import held_bytes

    step()  # outside any probe: the first step allocates the optimizer's state
    with MemoryProbe(device="cpu"):
        step()
    held = held_bytes(net.parameters()) + held_bytes(
        t for st in opt.state.values() for t in st.values())
    with MemoryProbe(device="cpu") as probe:
        step()
    return held, held + probe.peak_bytes


def recorded_step(step: Callable[[], None], rec: Any, marking: list[bool],
                  patches: list[tuple[Any, str, Any]]) -> list[Any]:
    """The CPU allocator's events (``rec``, an ``AllocRecorder``) of one more ``step``, run
    with each (object, attribute, replacement) of ``patches`` in place (the replacements
    mark where FSDP2 is) and ``marking`` turned on; the attributes are restored after it.
    Shared with bench/fsdp/stagepeak.py."""
    real = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    for obj, name, fn in patches:
        setattr(obj, name, fn)
    marking[0] = True
    rec.start()
    try:
        step()
    finally:
        items: list[Any] = rec.stop()
        for obj, name, fn in real:
            setattr(obj, name, fn)
    return items


def run_ranks(rank_main: Callable[..., None], at: float, prefix: str) -> list[dict[str, Any]]:
    """Spawn ``rank_main(rank, 2, port, out, at)`` on 2 ranks meeting at a free local port
    and return what each wrote to ``out``/rank<r>.json, by rank. Shared with
    bench/fsdp/stagepeak.py."""
    import torch.multiprocessing as mp

    with socket.socket() as so:
        so.bind(("127.0.0.1", 0))
        port = int(so.getsockname()[1])
    out = tempfile.mkdtemp(prefix=prefix)
    mp.start_processes(rank_main, args=(2, port, out, at), nprocs=2, start_method="spawn")
    return [json.loads(Path(out, f"rank{r}.json").read_text()) for r in range(2)]


def rank_main(rank: int, world: int, port: int, out: str, at: float) -> None:
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    from torch.distributed.fsdp import fully_shard
    from torch.distributed.fsdp._fully_shard import _fsdp_param_group as group
    from torch.distributed.fsdp._fully_shard import _fsdp_state as state

    import chainplan
    from chainplan.profiler.allocevents import MARK_PREFIX, AllocRecorder
    from chainplan.sharded import rank_memory

    model, mask, idx, y = gpt_rank(rank, world, port, out)
    prof = chainplan.profile(model, idx, loss_fn=F.cross_entropy, target=y, repeats=1,
                             warmup=0, progress=False, spread_warning=None, mask=mask)
    lo = chainplan.plan(prof, budget="min").budget_bytes
    hi = chainplan.plan(prof, budget="min", algo="store-all").budget_bytes
    plan = chainplan.plan(prof, budget=lo + int((hi - lo) * at))
    mem = rank_memory(model, world=world, gathered="step",
                      units=[f"blocks.{i}" for i in range(len(model.blocks))])
    net = plan.wrap(model)
    for block in net.blocks:
        fully_shard(block)
    fully_shard(net)
    opt = torch.optim.AdamW(net.parameters(), lr=1e-4)
    rec = AllocRecorder()
    marking = [False]

    def mark(name: str) -> None:
        if marking[0]:
            rec.mark(MARK_PREFIX + name)

    step = marked_step(net, opt, (idx, mask, y), mark)
    held, measured = measure_step(net, opt, step)
    real_final = state.FSDPState._root_post_backward_final_callback
    real_reduce = group.foreach_reduce

    def final(*a: Any, **k: Any) -> Any:
        mark("final callback")
        return real_final(*a, **k)

    def reduce(*a: Any, **k: Any) -> Any:
        mark("reduce-scatter")
        got = real_reduce(*a, **k)
        mark("after it")
        return got

    items = recorded_step(step, rec, marking, [
        (state.FSDPState, "_root_post_backward_final_callback", final),
        (group, "foreach_reduce", reduce)])
    level, segments = 0, [["start", 0, 0]]
    for it in items:
        if isinstance(it, int):
            level += it
            segments[-1][2] = max(segments[-1][2], level)
        else:
            segments.append([it[len(MARK_PREFIX):], level, level])
    Path(out, f"rank{rank}.json").write_text(json.dumps({
        "measured": measured, "held": held, "fixed": mem.fixed_bytes,
        "terms": mem.terms(), "activations": plan.peak_bytes, "segments": segments}))
    dist.barrier()
    dist.destroy_process_group()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--at", type=float, default=0.0,
                    help="the plan's budget, from its smallest (0) to store-all (1)")
    args = ap.parse_args()
    for r, d in enumerate(run_ranks(rank_main, args.at, "bench-fsdp-fixed-")):
        measured_fixed = d["measured"] - d["activations"]
        print(f"rank {r}: measured peak {d['measured'] / MiB:.2f} MiB (state "
              f"{d['held'] / MiB:.2f} + step {(d['measured'] - d['held']) / MiB:.2f}); planned "
              f"{(d['fixed'] + d['activations']) / MiB:.2f} = fixed {d['fixed'] / MiB:.2f} + "
              f"activations {d['activations'] / MiB:.2f}; measured fixed "
              f"{measured_fixed / MiB:.2f}, gap {(d['fixed'] - measured_fixed) / MiB:.2f} MiB")
        print(f"  rank_memory: {d['terms']}")
        for name, at, peak in d["segments"]:
            print(f"  {name:15s} level {at / MiB:6.2f} MiB, highest before the next "
                  f"{peak / MiB:6.2f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
