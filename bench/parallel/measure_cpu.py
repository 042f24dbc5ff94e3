"""Measure search3d's candidates on CPU gloo ranks, record them, calibrate (issue 34).

A stack of linear blocks is profiled on this machine (one thread, the batch sizes the
candidates use) and stored; search3d ranks every (pp, dp, mbs) on a cluster file of one
node of ``--ranks`` CPU "devices"; each candidate runs for real on that many spawned gloo
processes, one thread each, from its ``launch`` object alone (pipeline stages by its
``cuts``, sending activations and gradients between ranks, GPipe order; data parallelism
by DDP with gradient accumulation over ``microbatches``), and its iteration time (the
median of ``--steps`` after a warm-up, the fastest of ``--rounds`` rounds, the candidates
alternating: the machine may be shared) and every rank's peak resident memory are
recorded into the stored advice with ``record_measured``. The cluster file's link is
measured first: gloo all-reduces of 32 MiB (bandwidth) and of one float (latency); the
bandwidth is also stored with the run (``chainplan.parallel.record_link``). Then
the calibration is fitted on half the candidates and evaluated on the other half, both
ways (``chainplan advice calibrate``, ``search3d --calibration``): no candidate is
predicted by a fit that saw it.

Usage (from the repository root; it writes its store under --out)::

    python bench/parallel/measure_cpu.py --ranks 2 --global-batch 8 --out /tmp/cpu-advisors

Its launcher is small and self-contained (linear blocks, GPipe order, DDP), so that the
advisors' accuracy is measured apart from ``chainplan.parallelize``;
``examples/parallel/train.py --cluster ... --record`` launches a candidate with
``parallelize`` and records it the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.nn.parallel import DistributedDataParallel

WIDTH, SEQ, BLOCKS = 1024, 64, 8


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(WIDTH, WIDTH)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.fc(x))


def make_model() -> nn.Sequential:
    torch.manual_seed(0)
    return nn.Sequential(*[Block() for _ in range(BLOCKS)])


def batch(n: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, SEQ, WIDTH, generator=g), torch.randn(n, SEQ, WIDTH, generator=g)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pipeline_step(stage: nn.Module, rank: int, pp: int, launch: dict[str, Any],
                   x: torch.Tensor, y: torch.Tensor) -> None:
    """One GPipe iteration of a pp-stage pipeline (dp = 1): every micro-batch's forward,
    then every backward; activations forward and gradients back over gloo."""
    mbs, gas = launch["microbatch"], launch["microbatches"]
    ins: list[torch.Tensor] = []
    outs: list[torch.Tensor] = []
    for k in range(gas):
        if rank == 0:
            inp = x[k * mbs:(k + 1) * mbs]
        else:
            inp = torch.empty(mbs, SEQ, WIDTH)
            dist.recv(inp, rank - 1)
            inp.requires_grad_(True)
        out = stage(inp)
        if rank < pp - 1:
            dist.send(out.detach(), rank + 1)
        else:
            out = nn.functional.mse_loss(out, y[k * mbs:(k + 1) * mbs]) / gas
        ins.append(inp)
        outs.append(out)
    for k in range(gas):
        if rank == pp - 1:
            outs[k].backward()
        else:
            grad = torch.empty_like(outs[k])
            dist.recv(grad, rank + 1)
            outs[k].backward(grad)
        if rank > 0:
            dist.send(ins[k].grad, rank - 1)


def _rank(rank: int, world: int, port: int, launch: dict[str, Any], gbs: int, steps: int,
          out: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    mesh = launch["mesh"]
    pp, dp = mesh["pp"], mesh["dp"]
    if mesh["tp"] != 1 or pp * dp != world or (pp > 1 and dp > 1):
        raise SystemExit(f"this launcher runs pp×1 or 1×dp meshes on {world} ranks, "
                         f"not {mesh}")
    model = make_model()
    x, y = batch(gbs, seed=1)
    if pp > 1:
        bounds = [0, *launch["cuts"], BLOCKS]
        stage: nn.Module = model[bounds[rank]:bounds[rank + 1]]
        opt = torch.optim.AdamW(stage.parameters(), lr=1e-4)

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            _pipeline_step(stage, rank, pp, launch, x, y)
            opt.step()
    else:
        ddp = DistributedDataParallel(model)
        opt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
        mbs, gas = launch["microbatch"], launch["microbatches"]
        share = gbs // dp
        xs, ys = x[rank * share:(rank + 1) * share], y[rank * share:(rank + 1) * share]

        def step() -> None:
            opt.zero_grad(set_to_none=True)
            for k in range(gas):
                sl = slice(k * mbs, (k + 1) * mbs)
                if k < gas - 1:
                    with ddp.no_sync():
                        (nn.functional.mse_loss(ddp(xs[sl]), ys[sl]) / gas).backward()
                else:
                    (nn.functional.mse_loss(ddp(xs[sl]), ys[sl]) / gas).backward()
            opt.step()
    step()  # warm-up: left out, as advice record expects
    times = []
    for _ in range(steps):
        dist.barrier()
        start = time.perf_counter()
        step()
        dist.barrier()
        times.append(time.perf_counter() - start)
    # The median iteration: the machine is shared (other jobs preempt ranks at random).
    elapsed = sorted(times)[len(times) // 2]
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB
    peaks: list[Any] = [None] * world
    dist.all_gather_object(peaks, peak)
    if rank == 0:
        Path(out).write_text(json.dumps({"iteration_s": elapsed, "peaks": peaks}))
    dist.destroy_process_group()


def _link_rank(rank: int, world: int, port: int, out: str) -> None:
    torch.set_num_threads(1)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    big, small = torch.ones(8 << 20), torch.ones(1)
    result = {}
    for name, t in (("big", big), ("small", small)):
        dist.all_reduce(t)  # warm-up
        times = []
        for _ in range(7):
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - start)
        result[name] = sorted(times)[len(times) // 2]
    if rank == 0:
        # A ring all-reduce of B bytes on n ranks: 2(n−1)(α + B/(n·bandwidth)).
        hops = 2 * (world - 1)
        latency = result["small"] / hops
        bandwidth = big.numel() * 4 / world / max(result["big"] / hops - latency, 1e-9)
        Path(out).write_text(json.dumps({"bandwidth": bandwidth, "latency": latency}))
    dist.destroy_process_group()


def measure_link(ranks: int, out: Path) -> dict[str, float]:
    mp.spawn(_link_rank, args=(ranks, _free_port(), str(out)), nprocs=ranks)
    return dict(json.loads(out.read_text()))


def run_candidate(launch: dict[str, Any], ranks: int, gbs: int, steps: int,
                  out: Path) -> dict[str, Any]:
    mp.spawn(_rank, args=(ranks, _free_port(), launch, gbs, steps, str(out)), nprocs=ranks)
    return dict(json.loads(out.read_text()))


def cli(*args: str) -> str:
    exe = Path(sys.executable).parent / "chainplan"  # the console script beside this Python
    return subprocess.run([str(exe), *args], check=True, capture_output=True, text=True).stdout


def spearman(a: list[float], b: list[float]) -> float:
    def ranks(v: list[float]) -> list[float]:
        order = sorted(v)
        return [sum(i + 1 for i, w in enumerate(order) if w == x) / order.count(x) for x in v]
    ra, rb = ranks(a), ranks(b)
    ma, mb = sum(ra) / len(ra), sum(rb) / len(rb)
    cov = sum((p - ma) * (q - mb) for p, q in zip(ra, rb, strict=True))
    va = sum((p - ma) ** 2 for p in ra)
    vb = sum((q - mb) ** 2 for q in rb)
    return cov / (va * vb) ** 0.5


def accuracy(pred: list[float], meas: list[float]) -> float:
    return sum(1 - abs(p - m) / m for p, m in zip(pred, meas, strict=True)) / len(meas)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", type=int, default=2)
    ap.add_argument("--global-batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out", type=Path, default=Path("/tmp/cpu-advisors"))
    a = ap.parse_args()
    a.out.mkdir(parents=True, exist_ok=True)
    os.environ["CHAINPLAN_DB"] = str(a.out / "chainplan.db")
    import chainplan
    from chainplan.advicerecord import record_measured

    torch.set_num_threads(1)
    sizes = sorted({m for m in (1, 2, 4, 8, 16) if m <= a.global_batch})
    x, y = batch(sizes[-1], seed=0)
    prof = chainplan.profile(make_model(), x, loss_fn=nn.functional.mse_loss, target=y,
                             repeats=5, warmup=2, batch_sizes=sizes,
                             optimizer=torch.optim.AdamW, spread_warning=None)
    link = measure_link(a.ranks, a.out / "link.json")
    bw = f"{link['bandwidth'] / 1e9:.4f}GB/s"
    print(f"gloo link: {bw}, latency {link['latency'] * 1e6:.1f} µs", flush=True)
    # Stored with the run too: the advisors read it in place of a cluster file's nominal
    # figure (relink_cpu.py compares the two on this run's data).
    chainplan.parallel.record_link(prof, "intra", link["bandwidth"],
                                   method="gloo all-reduce of 32 MiB")
    cluster = {"name": f"cpu{a.ranks}", "nodes": [{
        "name": "cpu", "count": 1, "gpu": "CPU-thread", "gpus": a.ranks, "gpu_mem": "8GB",
        "intra_bw": bw, "inter_bw": bw, "host_bw": bw}],
        "latency": {"intra_s": link["latency"], "inter_s": link["latency"]}}
    cfile = a.out / "cluster.json"
    cfile.write_text(json.dumps(cluster))
    req: dict[str, Any] = {"global_batch": a.global_batch, "tmp_max": 1, "top_k": -1,
                           "memory_check": "off"}
    full = chainplan.parallel.search3d(prof, cfile, **req)
    half = [chainplan.parallel.search3d(prof, cfile, **req) for _ in range(2)]  # evens, odds
    rows = []
    # Each candidate runs in --rounds rounds, the candidates alternating; the fastest
    # round's median iteration is kept (AMP kept the best of its trials likewise).
    runs: dict[int, list[dict[str, Any]]] = {}
    for r in range(a.rounds):
        for i in range(len(full.candidates)):
            launch = full.raw["candidates"][i]["launch"]
            runs.setdefault(i, []).append(
                run_candidate(launch, a.ranks, a.global_batch, a.steps, a.out / f"c{i}-{r}.json"))
    for i, c in enumerate(full.candidates):
        launch = full.raw["candidates"][i]["launch"]
        got = min(runs[i], key=lambda g: float(g["iteration_s"]))
        record_measured(None, full.advice_id, i, got["iteration_s"], got["peaks"],
                        iterations=a.steps, metadata={"bench": "measure_cpu.py"})
        record_measured(None, half[i % 2].advice_id, i, got["iteration_s"], got["peaks"],
                        iterations=a.steps)
        rows.append((c, launch, got))
        print(f"candidate {i}: {launch['mesh']} mbs {launch['microbatch']} × "
              f"{launch['microbatches']}: predicted {c.iteration_time_s:.3f} s, "
              f"measured {got['iteration_s']:.3f} s", flush=True)
    # Held out: fit on evens, predict odds, and the other way round.
    held: dict[int, float] = {}
    refused = []
    for part in (0, 1):
        cal = a.out / f"calibration-{part}.json"
        try:
            cal.write_text(cli("advice", "calibrate", str(half[part].advice_id)))
        except subprocess.CalledProcessError as err:
            refused.append(err.stderr.strip())
            continue
        other = chainplan.parallel.search3d(prof, cfile, calibration=str(cal), **req)
        by_key = {(d.pp, d.dp, d.tmp, d.mbs): d.iteration_time_s for d in other.candidates}
        for i, (c, _, _) in enumerate(rows):
            if i % 2 != part:
                held[i] = by_key[(c.pp, c.dp, c.tmp, c.mbs)]
    meas = [got["iteration_s"] for _, _, got in rows]
    pred = [c.iteration_time_s for c, _, _ in rows]
    cal_pred = [held.get(i, 0.0) for i in range(len(rows))]
    after = ({"accuracy": accuracy(cal_pred, meas), "spearman": spearman(cal_pred, meas)}
             if len(held) == len(rows) else {"refused": refused})
    report = {"advice_id": full.advice_id, "candidates": len(rows), "link": link,
              "before": {"accuracy": accuracy(pred, meas), "spearman": spearman(pred, meas)},
              "after_held_out": after,
              "rows": [{"launch": la, "predicted_s": p, "calibrated_held_out_s": q,
                        "measured_s": got["iteration_s"], "peaks": got["peaks"]}
                       for (_, la, got), p, q in zip(rows, pred, cal_pred, strict=True)]}
    (a.out / "report.json").write_text(json.dumps(report, indent=1))
    print(json.dumps({k: report[k] for k in ("candidates", "before", "after_held_out")}))
    print(cli("advice", "accuracy", str(full.advice_id)))


if __name__ == "__main__":
    main()
