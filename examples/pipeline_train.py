"""Train a chain on several processes with a chainplan pipeline plan (torchrun, any node count).

Rank 0 finds the model's stored profile at the micro-batch size (or profiles it once, so
that every later launch plans from the same measurements and gets the same plan), asks the
Go planner for a pipeline plan over all the ranks (stored in its database, $CHAINPLAN_DB;
the same request gives back the stored plan) and shares it with the others; every rank then
runs its stages of the plan, trains a few optimizer steps, and measures the steady state
against the plan's period and its memory per rank (recorded as executions of the plan).

By default the plan is the one at the smallest memory per device at which it is faster than
one device running the model (``--memory faster``); ``--memory min`` shows the other end of
the trade, the least memory, usually slower than one device. The plan's speed-ups are
printed before training. ``--profile RUN`` pins the stored profile to plan from,
``--plan-id N`` a stored plan.

One node, four processes on the CPU (gloo)::

    torchrun --nproc-per-node 4 examples/pipeline_train.py --algo madpipe
    torchrun --nproc-per-node 4 examples/pipeline_train.py --memory min --checkpoint

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
    ap.add_argument("--algo", default=None, help="madpipe (the planner's default), contiguous "
                                                  "or pipedream")
    ap.add_argument("--memory", default="faster",
                    help="memory per device: 'faster' (the smallest at which the plan is faster "
                         "than one device), 'min' (the smallest), '2GiB', ...")
    ap.add_argument("--checkpoint", action="store_true",
                    help="let stages recompute their activations when memory is short")
    ap.add_argument("--headroom", type=float, default=None,
                    help="share of each device's memory the plan leaves free")
    ap.add_argument("--profile", type=int, help="plan from this stored profile (a run id)")
    ap.add_argument("--reprofile", action="store_true",
                    help="profile again even if a stored profile of this model matches")
    ap.add_argument("--plan-id", type=int, help="run this stored pipeline plan")
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
        shared[0] = make_plan(args, model, x, y, world, device)
        plan0 = shared[0]
        print(f"plan {plan0.plan_id}: {plan0}", flush=True)
        for note in plan0.notes:
            print(f"  {note}", flush=True)
    dist.broadcast_object_list(shared, src=0)
    plan = shared[0]
    assert plan is not None

    runner = plan.runner(model, loss_fn=loss_fn, seed=42, microbatches=args.microbatches)
    if rank == 0:
        print(f"schedule: {runner.schedule} ({runner.schedule_reason})", flush=True)
    # An idle rank (the plan leaves it no stage) has nothing to update.
    params = list(runner.parameters())
    opt = torch.optim.SGD(params, lr=0.05) if params else None
    for step in range(args.steps):
        loss = runner.step(x, target=y)
        if opt is not None:
            opt.step()
        if rank == 0 and (step % 5 == 0 or step == args.steps - 1):
            print(f"step {step}: loss {loss.item():.4f}", flush=True)

    ex = runner.measure(x, target=y, steps=3, optimizer=opt)
    if rank == 0:
        print(ex, flush=True)
        verdict = "within" if ex.fits else "ABOVE"
        print(f"peak memory {verdict} the plan's {plan.memory_bytes / 2**20:.1f} MiB per device "
              f"on every rank", flush=True)
        if ex.execution_ids:
            print(f"recorded as executions {list(ex.execution_ids)} of plan {plan.plan_id}")
    # Every rank leaves together: a rank that tears its process group down while another
    # still talks to it (the last broadcast) makes that one fail at exit.
    dist.barrier()
    dist.destroy_process_group()


def make_plan(args: argparse.Namespace, model: nn.Module, x: torch.Tensor, y: torch.Tensor,
              world: int, device: torch.device) -> PipelinePlan:
    """Rank 0's plan: a file, a stored plan, or planned from the (stored) profile."""
    if args.plan:
        with open(args.plan) as f:
            return PipelinePlan.from_json(f.read(), microbatches=args.microbatches)
    if args.plan_id is not None:
        return PipelinePlan.load(args.plan_id)
    mb = args.microbatch_size
    loss_fn = nn.functional.cross_entropy
    run = args.profile
    if run is None and not args.reprofile:
        run = chainplan.reuse.find_profile(model, x[:mb].to(device), loss_fn=loss_fn)
        if run is not None:
            print(f"planning from the stored profile of run {run} (--reprofile to measure "
                  f"again)", flush=True)
    if run is None:
        # The planner's mini-batch is the executor's micro-batch: profile at that size.
        run = chainplan.profile(model.to(device), x[:mb].to(device), loss_fn=loss_fn,
                                target=y[:mb].to(device)).run_id
    return pipeline_plan(run, gpus=world, memory=args.memory, bandwidth=args.bandwidth,
                         algo=args.algo, microbatches=args.microbatches,
                         checkpoint=args.checkpoint, headroom=args.headroom)


if __name__ == "__main__":
    main()
