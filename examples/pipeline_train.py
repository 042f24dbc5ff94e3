"""Train a chain on several processes with a chainplan pipeline plan (torchrun, any node count).

Rank 0 profiles the model at the micro-batch size, asks the Go planner for a pipeline plan
over all the ranks (stored in its database, $CHAINPLAN_DB) and shares it with the others;
every rank then runs its stages of the plan, trains a few optimizer steps, and measures the
steady state against the plan's period and memory (recorded as executions of the plan).

One node, four processes on the CPU (gloo)::

    torchrun --nproc-per-node 4 examples/pipeline_train.py --algo madpipe

Two nodes of two processes each (run on both, with the first node's address)::

    torchrun --nnodes 2 --nproc-per-node 2 --rdzv-backend c10d \\
        --rdzv-endpoint node0.example:29500 --rdzv-id pipeline-demo \\
        examples/pipeline_train.py

On CUDA machines each process takes the GPU of its LOCAL_RANK and talks over NCCL. A plan
made elsewhere (``chainplan pipeline ... -o plan.json``) runs with ``--plan plan.json``.
docs/pipeline.md explains the plan, the executor and the measurements.
"""

from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
from torch import nn

import chainplan
from chainplan.pipeline import PipelinePlan, pipeline_plan


def mlp(width: int, layers: int, dropout: float) -> nn.Sequential:
    """The chain: ``layers`` residual MLP blocks between an input and an output layer."""
    torch.manual_seed(0)  # the same weights on every rank

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.body = nn.Sequential(nn.LayerNorm(width), nn.Linear(width, 4 * width),
                                      nn.GELU(), nn.Dropout(dropout),
                                      nn.Linear(4 * width, width))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.body(x)

    return nn.Sequential(nn.Linear(width, width), *[Block() for _ in range(layers)],
                         nn.Linear(width, 10))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--algo", default="madpipe", help="madpipe, contiguous or pipedream")
    ap.add_argument("--memory", default="tight",
                    help="memory per device: 'tight' (the contiguous planner's smallest, where "
                         "a device holding several stages pays off), 'min', '2GiB', ...")
    ap.add_argument("--bandwidth", default="1GB/s", help="bandwidth between two ranks")
    ap.add_argument("--microbatches", type=int, default=8, help="micro-batches per step")
    ap.add_argument("--microbatch-size", type=int, default=16)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--layers", type=int, default=8, help="residual blocks")
    ap.add_argument("--steps", type=int, default=10, help="training steps")
    ap.add_argument("--plan", help="run this chainplan.pipeline/v1 file instead of planning")
    args = ap.parse_args()

    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get(
        "LOCAL_WORLD_SIZE", str(world)))))
    device = torch.device("cuda", torch.cuda.current_device()) if cuda else torch.device("cpu")

    model = mlp(args.width, args.layers, dropout=0.1)
    loss_fn = nn.functional.cross_entropy
    batch = args.microbatch_size * args.microbatches
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(batch, args.width, generator=gen)
    y = torch.randint(0, 10, (batch,), generator=gen)

    shared: list[PipelinePlan | None] = [None]
    if rank == 0:
        if args.plan:
            with open(args.plan) as f:
                shared[0] = PipelinePlan.from_json(f.read(), microbatches=args.microbatches)
        else:
            # The planner's mini-batch is the executor's micro-batch: profile at that size.
            prof = chainplan.profile(model.to(device), x[:args.microbatch_size].to(device),
                                     loss_fn=loss_fn, target=y[:args.microbatch_size].to(device))
            memory = args.memory
            if memory == "tight":
                memory = pipeline_plan(prof, gpus=world, memory="min", bandwidth=args.bandwidth,
                                       algo="contiguous").memory_bytes
            shared[0] = pipeline_plan(prof, gpus=world, memory=memory,
                                      bandwidth=args.bandwidth, algo=args.algo,
                                      microbatches=args.microbatches)
        print(f"plan {shared[0].plan_id}: {shared[0]}", flush=True)
    dist.broadcast_object_list(shared, src=0)
    plan = shared[0]
    assert plan is not None

    runner = plan.runner(model, loss_fn=loss_fn, seed=42)
    if rank == 0:
        print(f"schedule: {runner.schedule} ({runner.schedule_reason})", flush=True)
    opt = torch.optim.SGD(runner.parameters(), lr=0.05)
    for step in range(args.steps):
        loss = runner.step(x, target=y)
        opt.step()
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print(f"step {step}: loss {loss.item():.4f}", flush=True)

    ex = runner.measure(x, target=y, steps=3)
    if rank == 0:
        print(ex, flush=True)
        if ex.execution_ids:
            print(f"recorded as executions {list(ex.execution_ids)} of plan {plan.plan_id}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
