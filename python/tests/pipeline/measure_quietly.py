"""Two gloo ranks train a step, then measure a pipeline plan twice, with an optimizer
(``python -m tests.pipeline.measure_quietly``, from ``python/``): what a user's script
does. test_runner.py runs it as a program and reads its standard error, where torch's C++
warnings go."""

from __future__ import annotations

import os
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from tests.pipeline.plans import modulo_plan
from tests.pipeline.workers import chain, loss_fn


def _rank(rank: int, world: int, port: int) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    dist.init_process_group("gloo", rank=rank, world_size=world)
    from chainplan.pipeline import PipelinePlan

    plan = PipelinePlan.from_dict({**modulo_plan([0, 1, 1, 0]), "weight_copies": 4})  # Adam
    runner = plan.runner(chain(4), loss_fn=loss_fn, microbatches=4)
    opt = torch.optim.Adam(runner.parameters(), lr=1e-3)
    x = torch.randn(8, 16)
    runner.step(x, target=x)  # gradients allocated before any measurement
    opt.step()
    for _ in range(2):
        ex = runner.measure(x, target=x, steps=1, store=False, optimizer=opt)
    if rank == 0:
        print(ex, flush=True)
    # Without it, one rank could tear gloo down while the other still used its pair: a CI
    # run saw rank 1 abort ("terminate called without an active exception") at exit.
    dist.barrier()
    dist.destroy_process_group()


def main() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    mp.start_processes(_rank, args=(2, port), nprocs=2, start_method="spawn")


if __name__ == "__main__":
    main()
