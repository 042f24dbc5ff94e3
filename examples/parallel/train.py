"""Launch a 3-D candidate with chainplan.parallelize, train, measure it, and record it.

Every rank builds the same small transformer (an ``nn.Sequential`` of an embedding, blocks
with q/k/v/o attention and an up/down MLP, and a head: tensor parallelism recognises its
blocks, a pipeline cuts its chain). The candidate comes from one of:

* ``--candidate FILE``: a launch candidate (docs/distributed.md, "The candidate shape"), or
  a ``chainplan search3d --json`` result, whose ``--pick`` N-th candidate is taken;
* ``--cluster FILE``: rank 0 profiles the model at the micro-batch size (stored in
  $CHAINPLAN_DB), runs search3d on the cluster for ``--global-batch`` and picks the N-th
  candidate that runs on this many processes; the result is stored, so the measurement is
  recorded against it;
* explicit flags: ``--pp --dp --tp --microbatch --microbatches --cuts --checkpoint``.

It trains ``--steps`` AdamW steps, measures the iteration time and every rank's peak
(chainplan.launch.measure), prints them as JSON (``--json FILE`` writes them too), and with
``--record DB`` stores them as the candidate's measurement in that database (``advice
record``'s table; ``--advice-id`` names a stored search3d result given as a file).
``chainplan advice accuracy ID`` then compares predicted and measured.

Four CPU processes::

    torchrun --nproc-per-node 4 examples/parallel/train.py --pp 2 --dp 2 --cuts 3 --microbatches 4
    torchrun --nproc-per-node 2 examples/parallel/train.py --tp 2
    torchrun --nproc-per-node 4 examples/parallel/train.py \\
        --cluster examples/clusters/cpu-4.yaml --global-batch 16 --record chainplan.db
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import sys
from typing import Any

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn

import chainplan
from chainplan.launch.candidate import LaunchCandidate
from chainplan.launch.measure import measure

VOCAB, SEQ = 256, 32


class Attention(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.n_heads = heads
        self.q, self.k, self.v, self.o = (nn.Linear(width, width, bias=False) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        q, k, v = (f(x).view(b, t, self.n_heads, -1).transpose(1, 2)
                   for f in (self.q, self.k, self.v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.o(y.transpose(1, 2).reshape(b, t, -1))


class Block(nn.Module):
    def __init__(self, width: int, heads: int) -> None:
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.attn = Attention(width, heads)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln1(x))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Head(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.norm, self.out = nn.LayerNorm(width), nn.Linear(width, VOCAB)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.out(self.norm(x))


def model(width: int, layers: int, heads: int) -> nn.Sequential:
    torch.manual_seed(0)  # the same weights on every rank
    return nn.Sequential(nn.Embedding(VOCAB, width), *[Block(width, heads) for _ in range(layers)],
                         Head(width))


def lm_loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(out.flatten(0, 1), target.flatten())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--candidate", help="a launch candidate or a search3d result (JSON file)")
    ap.add_argument("--pick", type=int, default=0, help="the N-th candidate of a search3d result")
    ap.add_argument("--cluster", help="search on this cluster file (rank 0) and launch the pick")
    ap.add_argument("--global-batch", type=int, default=16, help="search3d's samples per step")
    ap.add_argument("--advice-id", type=int, help="the stored search3d result --candidate is")
    ap.add_argument("--record", metavar="DB", help="record the measurement in this database")
    ap.add_argument("--pp", type=int, default=1)
    ap.add_argument("--dp", type=int)
    ap.add_argument("--tp", type=int, default=1)
    ap.add_argument("--microbatch", type=int, default=4)
    ap.add_argument("--microbatches", type=int, default=1)
    ap.add_argument("--cuts", default="", help="comma-separated last layers of each stage")
    ap.add_argument("--checkpoint", default=None,
                    help="budget per stage, comma-separated: none, min, bytes or 2GiB")
    ap.add_argument("--memory", help="one rank's device memory (bytes or a size such as 6GiB): "
                    "chainplan plans each rank's activations within it less the rank's "
                    "sharded state and buffers, instead of the candidate's checkpoint")
    ap.add_argument("--data-parallel", default="ddp", choices=("ddp", "fsdp"))
    ap.add_argument("--compile", action="store_true")
    ap.add_argument("--width", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--steps", type=int, default=5, help="timed steps (after one warm-up)")
    ap.add_argument("--json", help="write the measurement here too")
    args = ap.parse_args()
    if args.record:
        os.environ["CHAINPLAN_DB"] = args.record  # before chainplan opens a database

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get(
        "LOCAL_WORLD_SIZE", str(world)))))
    net = model(args.width, args.layers, args.heads)

    # Rank 0 chooses (a search runs once); every rank gets the same candidate.
    shared: list[Any] = [None]
    if rank == 0:
        try:
            shared[0] = choose(args, net, world)
        except chainplan.ChainplanError as err:
            shared[0] = err
    dist.broadcast_object_list(shared, src=0)
    if isinstance(shared[0], Exception):
        if rank == 0:
            print(f"train.py: {shared[0]}", file=sys.stderr)
        dist.destroy_process_group()
        sys.exit(2)
    cand, search, advice_id = shared[0]
    try:  # refused alike on every rank, before any collective
        if args.memory:  # the rank planned within its memory (docs/distributed.md)
            cand = dataclasses.replace(cand, memory=args.memory, checkpoint=(None,) * cand.pp)
        par = chainplan.parallelize(net, candidate=cand, loss_fn=lm_loss,
                                    data_parallel=args.data_parallel, compile=args.compile)
    except chainplan.ChainplanError as err:
        if rank == 0:
            print(f"train.py: {err}", file=sys.stderr)
        dist.destroy_process_group()
        sys.exit(2)
    if rank == 0:
        print(f"candidate: {cand.to_json()}", flush=True)
    replica = par.groups.dp.rank() if par.groups.dp is not None else 0
    gen = torch.Generator().manual_seed(1 + replica)  # each replica its own data
    x = torch.randint(0, VOCAB, (par.batch, SEQ), generator=gen)
    y = torch.roll(x, -1, dims=1)
    opt = torch.optim.AdamW(list(par.parameters()), lr=1e-3)
    losses: list[float] = []

    def step() -> None:
        losses.append(par.step(x, target=y).item())

    got = measure(par, step, opt, steps=args.steps)
    out = {"candidate": cand.to_dict(), "world": world, **got.to_dict(), "losses": losses,
           "device": str(par.groups.device)}
    if rank == 0:
        if args.record:
            out["measurement_id"] = record(search, advice_id, args.pick, got)
            out["advice_id"] = advice_id or getattr(search, "advice_id", None)
        print(json.dumps(out), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)
    dist.barrier()
    dist.destroy_process_group()


def choose(args: argparse.Namespace, net: nn.Module,
           world: int) -> tuple[LaunchCandidate, Any, int | None]:
    """The candidate, and the search3d result and advice id it belongs to (if any)."""
    if args.cluster:
        x = torch.randint(0, VOCAB, (args.microbatch, SEQ))
        prof = chainplan.profile(net, x, loss_fn=lm_loss, target=torch.roll(x, -1, dims=1))
        s3 = chainplan.parallel.search3d(prof, args.cluster, global_batch=args.global_batch)
        fits = [c for c in s3.raw["candidates"] if c["pp"] * c["dp"] * c["tmp"] == world]
        if len(fits) <= args.pick:
            raise chainplan.ChainplanError(f"search3d gave {len(fits)} candidates for {world} "
                                           f"processes; --pick {args.pick} is past them")
        index = s3.raw["candidates"].index(fits[args.pick])
        return LaunchCandidate.from_search3d(fits[args.pick], f"candidates[{index}]"), \
            s3, s3.advice_id
    if args.candidate:
        with open(args.candidate) as f:
            doc = json.load(f)
        if isinstance(doc, dict) and "candidates" in doc:
            c = doc["candidates"][args.pick]
            return LaunchCandidate.from_search3d(c, f"candidates[{args.pick}]"), doc, \
                args.advice_id
        return LaunchCandidate.from_dict(doc, args.candidate), None, None
    budgets = [None if b in ("", "none") else int(b) if b.isdigit() else b
               for b in (args.checkpoint or "none").split(",")]
    return LaunchCandidate(pp=args.pp, dp=args.dp or world // (args.pp * args.tp), tp=args.tp,
                           microbatch=args.microbatch, microbatches=args.microbatches,
                           cuts=tuple(int(c) for c in args.cuts.split(",") if c),
                           checkpoint=tuple(budgets)), None, None


def record(search: Any, advice_id: int | None, pick: int, got: Any) -> int:
    """Store the measurement, every rank's peak with it, against the search3d result
    (``record_measured``: what ``chainplan advice record --rank-peaks`` stores)."""
    from chainplan.advice import Search3D
    from chainplan.advicerecord import record_measured

    stored = search.advice_id if isinstance(search, Search3D) else advice_id
    if search is None or not stored:
        raise chainplan.ChainplanError("--record needs a stored search3d result: --cluster, or "
                                       "--candidate FILE with --advice-id")
    index = _index(search, pick) if isinstance(search, Search3D) else pick
    return record_measured(None, stored, index, got.iteration_time_s, got.peak_bytes,
                           iterations=got.iterations,
                           metadata={"command": " ".join(sys.argv), "launcher": "parallelize"})


def _index(s3: Any, pick: int) -> int:
    world = dist.get_world_size()
    fits = [i for i, c in enumerate(s3.raw["candidates"])
            if c["pp"] * c["dp"] * c["tmp"] == world]
    return fits[pick]


if __name__ == "__main__":
    main()
