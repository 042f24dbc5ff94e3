"""The pipeline executor: one rank's stages of a plan, run with a synchronous flush per step.

Every rank builds a :class:`PipelineRunner` from the same plan and the same model, after
``torch.distributed.init_process_group`` (``torchrun`` sets the environment it reads). The
runner keeps the layers of the plan stages the rank holds, one ``PipelineStage`` per plan
stage (several per rank where the plan says so, adjacent or not), and runs them in the
order of the plan's periodic pattern over the step's micro-batches
(:func:`chainplan.pipeline.order.rank_orders`). Where that order is one of torch's built-in
schedules (``Schedule1F1B``, ``ScheduleGPipe``, ``ScheduleInterleaved1F1B``) the built-in
runs it; otherwise torch's private runtime (:mod:`chainplan.pipeline.runtime`) does.
:attr:`PipelineRunner.schedule` and :attr:`PipelineRunner.schedule_reason` say which and
why.

Usage (on every rank, e.g. under ``torchrun --nproc-per-node 4``)::

    dist.init_process_group("gloo")
    runner = plan.runner(model, loss_fn=nn.functional.cross_entropy, microbatches=8)
    opt = torch.optim.SGD(runner.parameters(), lr=0.1)
    for x, y in data:                 # every rank passes the same batch
        loss = runner.step(x, target=y)
        opt.step()
"""

from __future__ import annotations

import itertools
import math
import socket
import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any, Literal

import torch
import torch.distributed as dist
from torch import nn

from chainplan.errors import PipelineError, ScheduleError
from chainplan.pipeline import runtime
from chainplan.pipeline.block import StageBlock
from chainplan.pipeline.failure import FailureBoard
from chainplan.pipeline.measure import (
    LossFn,
    PipelineExecution,
    RankMeasure,
    record,
    steady_time,
)
from chainplan.pipeline.order import builtin_schedule, first_difference, rank_orders
from chainplan.pipeline.plan import PipelinePlan
from chainplan.pipeline.reference import split_microbatches
from chainplan.stages import flatten_stages

__all__ = ["PipelineRunner", "ScheduleChoice"]

#: ``auto``: a built-in schedule where the plan's order is one, else the plan's; ``plan``:
#: always the plan's order (through torch's runtime); ``1f1b``/``gpipe``: torch's built-in
#: on the plan's partition whatever the plan's order (for comparisons).
ScheduleChoice = Literal["auto", "plan", "1f1b", "gpipe"]
_runner_ids = itertools.count()


class PipelineRunner:
    """This rank's part of a pipeline plan, ready to run optimizer steps.

    Args:
        plan: the plan, the same on every rank.
        model: the chain (:func:`chainplan.stages.flatten_stages`), built alike on every
            rank; the runner moves the layers of its stages to ``device`` and trains them
            in place.

    Keyword Args:
        loss_fn: ``loss_fn(output, target)`` (or ``loss_fn(output)`` without a target),
            mean-reduced over the micro-batch (default: the mean square of the output).
        microbatches: N per step (default: the plan's ``microbatches``).
        device: where this rank's stages run (default: ``cuda:<current device>`` when the
            process group's backend is NCCL, else the CPU).
        seed: makes forward randomness (dropout) a function of the seed, the step, the
            micro-batch and the layer (:mod:`chainplan.pipeline.block`), the same as
            :func:`~chainplan.pipeline.reference.reference_step` draws (default: None, the
            process's generator).
        schedule: ``auto`` (default), ``plan``, ``1f1b`` or ``gpipe``
            (:data:`ScheduleChoice`).
        timeout_s: how long a rank waits for a peer before giving up, naming the rank that
            failed (seconds; default: 300).
        max_outstanding_sends: sends a rank may have pending when it runs the plan's order
            through torch's runtime (default: 2; None: torch's placement, which holds every
            micro-batch's input gradient until the end of the step).

    Raises:
        PipelineError: no process group, a world size other than the plan's GPU count, or
            a torch release the executor was not tested with.
        ScheduleError: the model's layers do not match the plan, no micro-batch count, or
            a built-in ``schedule`` that cannot hold the plan's partition.

    All of these are raised on every rank before any rank waits for another.
    """

    def __init__(self, plan: PipelinePlan, model: nn.Module, *, loss_fn: LossFn | None = None,
                 microbatches: int | None = None, device: torch.device | str | None = None,
                 seed: int | None = None, schedule: ScheduleChoice = "auto",
                 timeout_s: float = 300.0, max_outstanding_sends: int | None = 2) -> None:
        runtime.check_torch_version()
        if not dist.is_available() or not dist.is_initialized():
            raise PipelineError("a pipeline runs in a process group: call "
                                "torch.distributed.init_process_group first (torchrun sets "
                                "what it needs)")
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        if self.world != plan.gpus:
            raise PipelineError(f"the plan runs on {plan.gpus} GPUs but the process group "
                                f"has {self.world} ranks (launch {plan.gpus} processes)")
        n = microbatches if microbatches is not None else plan.microbatches
        if n is None:
            raise ScheduleError("microbatches: the plan was made without a micro-batch count; "
                                "pass microbatches=N")
        self.plan, self.microbatches = plan, n
        self.loss_fn = loss_fn
        self._max_sends = max_outstanding_sends
        self.device = torch.device(device) if device is not None else _default_device()
        layers = _check_model(plan, model)
        self.orders = rank_orders(plan, n)
        name, why = _choose(plan, self.orders, n, schedule)
        backend = "nccl" if self.device.type == "cuda" else "gloo"
        # The stages talk in a group of the ranks that hold some (torch wants no more ranks
        # than stages); the loss and the measurements go to every rank.
        used = sorted({s.gpu for s in plan.stages})
        timeout = timedelta(seconds=timeout_s)
        group = dist.new_group(backend=backend, timeout=timeout)
        assert isinstance(group, dist.ProcessGroup)  # every rank is a member
        self._group = group
        # Not a ProcessGroup on an idle rank, which never uses it.
        self._pp_group: Any = group if len(used) == self.world else dist.new_group(
            ranks=used, backend=backend, timeout=timeout)
        self._group_orders = {used.index(g): acts for g, acts in self.orders.items()
                              if g in used}
        self._board = FailureBoard(runtime.failure_store(),
                                   f"chainplan/pipeline/{next(_runner_ids)}", self.rank,
                                   self.world, timeout_s)
        self.blocks: dict[int, StageBlock] = {}
        for s in plan.stages_on(self.rank):
            block = StageBlock(layers[s.first - 1:s.last], s.first).to(self.device)
            block.seed = seed
            self.blocks[s.index] = block
        self._starts: dict[tuple[int, int], float] = {}
        self._step = 0
        self._schedule = self._build(name) if self.blocks else None
        if schedule == "auto" and name == "" and self._schedule is not None \
                and _interleaved_candidate(plan):
            got = runtime.interleaved_schedule(self._stages, n, self._loss)
            diff = "ScheduleInterleaved1F1B refuses this micro-batch count" if got is None \
                else first_difference(self.orders, got[1], "ScheduleInterleaved1F1B")
            if not diff and got is not None:
                self._schedule, name = got[0], "ScheduleInterleaved1F1B"
                why = "every rank's order is ScheduleInterleaved1F1B's"
            else:
                why = f"{why}; {diff}"
        self.schedule = name or "plan"
        self.schedule_reason = why
        # The steady-state window is the plan's: it measures only a schedule in its order.
        self._plan_order = schedule in ("auto", "plan") or \
            builtin_schedule(plan, self.orders, n)[0] == name

    def _build(self, name: str) -> Any:
        from torch.distributed.pipelining import PipelineStage, Schedule1F1B, ScheduleGPipe

        self._stages = []
        for k, block in self.blocks.items():
            stage = PipelineStage(block, k, len(self.plan.stages), self.device,
                                  group=self._pp_group)
            stage.register_forward_context(self._forward_context(block))
            self._stages.append(stage)
        n = self.microbatches
        if name == "Schedule1F1B":
            return Schedule1F1B(self._stages[0], n, loss_fn=self._loss, scale_grads=True)
        if name == "ScheduleGPipe":
            return ScheduleGPipe(self._stages[0], n, loss_fn=self._loss, scale_grads=True)
        return runtime.plan_schedule(self._stages, n, self._loss, self._group_orders,
                                     max_outstanding_sends=self._max_sends)

    def _forward_context(self, block: StageBlock) -> Callable[[Any], Any]:
        @contextmanager
        def context(info: Any) -> Iterator[None]:
            block.microbatch = info.microbatch_index
            if not info.is_metadata_inference:
                self._starts[info.stage_index, info.microbatch_index] = time.perf_counter()
            yield
        return context

    def _loss(self, out: torch.Tensor, target: torch.Tensor | None) -> torch.Tensor:
        if self.loss_fn is None:
            return out.float().square().mean()
        return self.loss_fn(out) if target is None else self.loss_fn(out, target)

    def parameters(self) -> Iterator[nn.Parameter]:
        """The parameters of this rank's stages: what its optimizer updates."""
        for block in self.blocks.values():
            yield from block.parameters()

    @property
    def step_count(self) -> int:
        """The steps run so far (the ``step`` a seeded forward is drawn for)."""
        return self._step

    def step(self, x: torch.Tensor, *, target: torch.Tensor | None = None) -> torch.Tensor:
        """Run one optimizer step's forwards and backwards over the micro-batches.

        Every rank passes the same ``x`` (and ``target``): the rank holding the first
        stage feeds it, the one holding the last computes the loss. Gradients are replaced,
        not accumulated: afterwards the parameters of this rank's stages hold what one
        process would accumulate over the same micro-batches with the loss divided by
        their number (the full-batch gradient of a mean-reduced loss).

        Returns:
            The step's mean loss, on every rank (on this rank's device).

        Raises:
            ScheduleError: the batch or target does not split into equal micro-batches
                (raised on every rank before any communication).
            PipelineError: another rank failed (named) or stopped answering.
        """
        xs = split_microbatches(x, self.microbatches)
        ts = split_microbatches(target, self.microbatches, "the target") \
            if target is not None else None
        step = self._step
        for block in self.blocks.values():
            block.step = step
            block.zero_grad(set_to_none=True)
        self._starts.clear()
        losses: list[torch.Tensor] = []
        loss = torch.zeros((), device=self.device)
        try:
            if self._schedule is not None:
                first, last = 0 in self.blocks, len(self.plan.stages) - 1 in self.blocks
                self._schedule.step(
                    arg_mbs=[(xb.to(self.device),) for xb in xs] if first else None,
                    target_mbs=([tb.to(self.device) for tb in ts] if ts is not None
                                else [None] * self.microbatches) if last else None,
                    losses=losses, return_outputs=False)
            if losses:
                loss = torch.stack([v.detach().float() for v in losses]).mean()
            dist.broadcast(loss, src=self.plan.stages[-1].gpu, group=self._group)
        except Exception as e:
            err = self._board.explain(e, step, self._peers())
            if err is e:
                raise
            raise err from e
        self._step += 1
        return loss

    def _peers(self) -> list[int]:
        gpus = self.plan.stage_gpus
        near = {gpus[k + d] for k in self.blocks for d in (-1, 1) if 0 <= k + d < len(gpus)}
        return sorted(near - {self.rank})

    def measure(self, x: torch.Tensor, *, target: torch.Tensor | None = None, steps: int = 3,
                store: bool = True) -> PipelineExecution:
        """Run and measure steps on every rank: a warm-up step, a memory step, then
        ``steps`` timed steps (see :mod:`chainplan.pipeline.measure`).

        Keyword Args:
            target: as for :meth:`step`.
            steps: timed steps, ≥ 1 (default: 3).
            store: record the execution next to the plan (one ``executions`` row per rank,
                written by rank 0, which must reach the database that holds the plan)
                when the plan is stored (default: True).

        Returns:
            The same :class:`~chainplan.pipeline.measure.PipelineExecution` on every rank.
        """
        if steps < 1:
            raise ScheduleError(f"steps must be at least 1 (got {steps})")
        self.step(x, target=target)
        peak = self._peak_step(x, target)
        times, mb_times = [], []
        for _ in range(steps):
            dist.barrier(group=self._group)
            t0 = time.perf_counter()
            self.step(x, target=target)
            _sync(self.device)
            times.append(time.perf_counter() - t0)
            mb_times.append(steady_time(self.plan, self.microbatches, self._starts,
                                        list(self.blocks)) if self._plan_order else math.nan)
        mine = RankMeasure(self.rank, str(self.device), socket.gethostname(),
                           tuple(self.blocks), statistics.median(times),
                           statistics.median(mb_times), peak,
                           self.plan.memory_per_gpu[self.rank])
        gathered: list[Any] = [None] * self.world
        dist.all_gather_object(gathered, mine, group=self._group)
        ranks = tuple(gathered)
        steady = [r.microbatch_time_s for r in ranks if not math.isnan(r.microbatch_time_s)]
        ex = PipelineExecution(self.schedule, self.microbatches, steps,
                               max(r.step_time_s for r in ranks),
                               statistics.median(steady) if steady else math.nan,
                               self.plan.period, ranks)
        ids: list[Any] = [()]
        if self.rank == 0 and store and self.plan.plan_id is not None:
            ids = [record(self.plan, ex)]
        dist.broadcast_object_list(ids, src=0, group=self._group)
        return PipelineExecution(ex.schedule, ex.microbatches, ex.steps, ex.step_time_s,
                                 ex.microbatch_time_s, ex.predicted_period_s, ex.ranks,
                                 tuple(ids[0]))

    def _peak_step(self, x: torch.Tensor, target: torch.Tensor | None) -> int:
        if self.device.type == "cuda":
            _sync(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.step(x, target=target)
            _sync(self.device)
            return int(torch.cuda.max_memory_allocated(self.device))
        from chainplan.profiler.memory import MemoryProbe

        resident = sum(t.numel() * t.element_size() for block in self.blocks.values()
                       for t in itertools.chain(block.parameters(), block.buffers()))
        for block in self.blocks.values():
            block.zero_grad(set_to_none=True)
        with MemoryProbe(device=self.device) as probe:
            self.step(x, target=target)
        return resident + int(probe.peak_bytes)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _default_device() -> torch.device:
    # init_process_group() without a backend gives "cpu:gloo,cuda:nccl".
    if "nccl" in str(dist.get_backend()) and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _check_model(plan: PipelinePlan, model: nn.Module) -> list[nn.Module]:
    layers = flatten_stages(model)
    if len(layers) != plan.num_layers:
        raise ScheduleError(f"the model has {len(layers)} layers (its flattened "
                            f"nn.Sequential) but the plan's stages cover {plan.num_layers}")
    if plan.layer_param_bytes is not None:
        for i, (layer, want) in enumerate(zip(layers, plan.layer_param_bytes, strict=True)):
            got = sum(p.numel() * p.element_size() for p in layer.parameters())
            if got != want:
                raise ScheduleError(
                    f"layer {i + 1} ({type(layer).__name__}) has {got} bytes of parameters "
                    f"but the profile the plan was made from has {want}: not the same model")
    return layers


def _interleaved_candidate(plan: PipelinePlan) -> bool:
    s, p = len(plan.stages), plan.gpus
    return s > p and s % p == 0 and all(st.gpu == st.index % p for st in plan.stages)


def _choose(plan: PipelinePlan, orders: Any, n: int, choice: str) -> tuple[str, str]:
    if choice not in ("auto", "plan", "1f1b", "gpipe"):
        raise ScheduleError(f"schedule: unknown value {choice!r} (want auto, plan, 1f1b or "
                            f"gpipe)")
    if choice == "plan":
        return "", "asked for the plan's order (schedule='plan')"
    if choice == "auto":
        return builtin_schedule(plan, orders, n)
    name = {"1f1b": "Schedule1F1B", "gpipe": "ScheduleGPipe"}[choice]
    if len(plan.stages) != plan.gpus or any(s.gpu != s.index for s in plan.stages):
        raise ScheduleError(f"schedule={choice!r}: {name} puts stage s alone on rank s, and "
                            f"the plan's stages are on GPUs {list(plan.stage_gpus)}")
    if name == "Schedule1F1B" and n < len(plan.stages):
        raise ScheduleError(f"schedule='1f1b': Schedule1F1B needs micro-batches ≥ stages "
                            f"({n} < {len(plan.stages)})")
    return name, f"asked for {name} (schedule={choice!r})"
