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

The model is taken as written: an ``nn.Sequential`` is the chain of its declared layers,
any other model is cut from its graph as ``chainplan.profile`` cut it
(:mod:`chainplan.pipeline.layers`; ``example=`` gives one micro-batch's call to capture).
Plan stages that recompute (checkpointing inside stages) run as
:class:`~chainplan.pipeline.recompute.RecomputingStageModule` s.

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
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from chainplan._moved import warn_renamed
from chainplan.errors import PipelineError, ScheduleError
from chainplan.pipeline import runtime
from chainplan.pipeline.choice import ScheduleChoice, choose, interleaved_candidate
from chainplan.pipeline.document import PipelineDocument
from chainplan.pipeline.failure import FailureBoard
from chainplan.pipeline.layers import ModelLayers
from chainplan.pipeline.measure import LossFn, PipelineExecution, measure_runner
from chainplan.pipeline.order import builtin_schedule, first_difference, rank_orders
from chainplan.pipeline.recompute import RecomputingStageModule
from chainplan.pipeline.reference import split_microbatches
from chainplan.pipeline.stagemodule import StageModule

__all__ = ["PipelineRunner", "ScheduleChoice"]

_runner_ids = itertools.count()


class PipelineRunner:
    """This rank's stages of a pipeline plan, ready to run optimizer steps.

    Args:
        plan: the plan, the same on every rank.
        model: the model as written, built alike on every rank: an ``nn.Sequential``
            (:func:`chainplan.stages.flatten_stages`) or any model that
            ``chainplan.profile`` splits from its graph (with ``example``); the runner
            moves the layers of its stages to ``device`` and trains them in place.

    Keyword Args:
        loss_fn: ``loss_fn(output, target)`` (or ``loss_fn(output)`` without a target),
            mean-reduced over the micro-batch (default: the mean square of the output).
        microbatches: N per step (default: the plan's ``microbatches``).
        device: where this rank's stages run (default: ``cuda:<current device>`` when the
            process group's backend is NCCL, else the CPU).
        seed: makes forward randomness (dropout) a function of the seed, the step, the
            micro-batch and the layer (:mod:`chainplan.pipeline.stagemodule`), the same as
            :func:`~chainplan.pipeline.reference.reference_step` draws (default: None, the
            process's generator).
        schedule: ``auto`` (default), ``plan``, ``1f1b`` or ``gpipe``
            (:data:`ScheduleChoice`).
        timeout_s: how long a rank waits for a peer before giving up, naming the rank that
            failed (seconds; default: 300).
        max_outstanding_sends: sends a rank may have pending when it runs the plan's order
            through torch's runtime (default: 2; None: torch's placement, which holds every
            micro-batch's input gradient until the end of the step).
        example: for a model that is not an ``nn.Sequential`` called with one tensor, one
            micro-batch's positional arguments of its forward (a tensor, or a tuple whose
            first element is the chain input), as ``chainplan.profile`` was given them.
        example_kwargs: that call's keyword arguments (an attention mask, ...).
        group: the ranks that run the plan, the plan's GPU ``g`` being the group's rank
            ``g`` (default: every rank). A pipeline of a larger mesh (one pipeline per
            data-parallel replica, :func:`chainplan.parallelize`) passes its ``pp`` group;
            every rank of it must hold a stage. Failures are named by global rank.

    Raises:
        PipelineError: no process group, a world size other than the plan's GPU count, or
            a torch release the executor was not tested with.
        ScheduleError: the model's layers do not match the plan, a model cut from its graph
            without ``example``, no micro-batch count, or a built-in ``schedule`` that
            cannot hold the plan's partition.
        CaptureError: the model cannot be captured.

    All of these are raised on every rank before any rank waits for another.
    """

    def __init__(self, plan: PipelineDocument, model: nn.Module, *, loss_fn: LossFn | None = None,
                 microbatches: int | None = None, device: torch.device | str | None = None,
                 seed: int | None = None, schedule: ScheduleChoice = "auto",
                 timeout_s: float = 300.0, max_outstanding_sends: int | None = 2,
                 example: Any = None, example_kwargs: dict[str, Any] | None = None,
                 group: dist.ProcessGroup | None = None) -> None:
        runtime.check_torch_version()
        if not dist.is_available() or not dist.is_initialized():
            raise PipelineError("a pipeline runs in a process group: call "
                                "torch.distributed.init_process_group first (torchrun sets "
                                "what it needs)")
        self.rank, self.world = dist.get_rank(group), dist.get_world_size(group)
        if self.world != plan.gpus:
            what = "the process group" if group is None else "its pipeline group"
            raise PipelineError(f"the plan runs on {plan.gpus} GPUs but {what} "
                                f"has {self.world} ranks (launch {plan.gpus} processes)")
        n = microbatches if microbatches is not None else plan.microbatches
        if n is None:
            raise ScheduleError("microbatches: the plan was made without a micro-batch count; "
                                "pass microbatches=N")
        self.plan, self.microbatches = plan, n
        self.loss_fn = loss_fn
        self._max_sends = max_outstanding_sends
        self.device = torch.device(device) if device is not None else _default_device()
        self.layers = ModelLayers(plan, model, example, example_kwargs)
        self.orders = rank_orders(plan, n)
        name, why = choose(plan, self.orders, n, schedule)
        backend = "nccl" if self.device.type == "cuda" else "gloo"
        # The stages talk in a group of the ranks that hold some (torch wants no more ranks
        # than stages); the loss and the measurements go to every rank.
        used = sorted({s.gpu for s in plan.stages})
        timeout = timedelta(seconds=timeout_s)
        if group is not None and len(used) != self.world:
            idle = sorted(set(range(self.world)) - set(used))
            raise ScheduleError(f"the plan leaves ranks {idle} of its pipeline group without a "
                                f"stage: a pipeline of a larger mesh wants a stage on every rank")
        made = group if group is not None else dist.new_group(backend=backend, timeout=timeout)
        assert isinstance(made, dist.ProcessGroup)  # every rank is a member
        group = self._group = made
        # Not a ProcessGroup on an idle rank, which never uses it.
        self._pp_group: Any = group if len(used) == self.world else dist.new_group(
            ranks=used, backend=backend, timeout=timeout)
        self._group_orders = {used.index(g): acts for g, acts in self.orders.items()
                              if g in used}
        self._board = FailureBoard(runtime.failure_store(),
                                   f"chainplan/pipeline/{next(_runner_ids)}", dist.get_rank(),
                                   dist.get_world_size(), timeout_s)
        self.stage_modules: dict[int, StageModule] = {}  # plan stage index → its module

        def context(mb: int) -> Any:
            return self.layers.side(mb, self.device)

        for s in plan.stages_on(self.rank):
            mine = self.layers.layers[s.first - 1:s.last]
            module = StageModule(mine, s.first, context) if s.recompute is None else \
                RecomputingStageModule(mine, s.first, s.recompute, context)
            module.to(self.device)
            module.seed = seed
            self.stage_modules[s.index] = module
        self._starts: dict[tuple[int, int], float] = {}
        self._inferred = False
        self._step = 0
        self._schedule = self._build(name) if self.stage_modules else None
        if schedule == "auto" and name == "" and self._schedule is not None \
                and interleaved_candidate(plan):
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
        from torch.distributed.pipelining import Schedule1F1B, ScheduleGPipe

        from chainplan.pipeline.stage import LossReleasingStage

        self._stages = []
        for k, module in self.stage_modules.items():
            stage = LossReleasingStage(module, k, len(self.plan.stages), self.device,
                                       group=self._pp_group)
            stage.register_forward_context(self._forward_context(module))
            self._stages.append(stage)
        n = self.microbatches
        if name == "Schedule1F1B":
            return Schedule1F1B(self._stages[0], n, loss_fn=self._loss, scale_grads=False)
        if name == "ScheduleGPipe":
            return ScheduleGPipe(self._stages[0], n, loss_fn=self._loss, scale_grads=False)
        return runtime.plan_schedule(self._stages, n, self._loss, self._group_orders,
                                     max_outstanding_sends=self._max_sends)

    def _forward_context(self, module: StageModule) -> Callable[[Any], Any]:
        @contextmanager
        def context(info: Any) -> Iterator[None]:
            module.microbatch = info.microbatch_index
            module.inference = bool(info.is_metadata_inference)
            if info.is_metadata_inference:
                self._inferred = True
            elif self._inferred:  # the step starts after torch's shape inference
                self.layers.forget_sides()
                self._inferred = False
            if not info.is_metadata_inference:
                self._starts[info.stage_index, info.microbatch_index] = time.perf_counter()
            yield
        return context

    def _loss(self, out: torch.Tensor, target: torch.Tensor | None) -> torch.Tensor:
        if self.loss_fn is None:
            loss = out.float().square().mean()
        else:
            loss = self.loss_fn(out) if target is None else self.loss_fn(out, target)
        # The schedule keeps every micro-batch's loss until the step ends; a loss that is a
        # view of a larger buffer (mse_loss's) would keep the buffer (stage.py).
        if loss.untyped_storage().nbytes() > loss.numel() * loss.element_size():
            loss = loss.clone()
        return loss

    def parameters(self) -> Iterator[nn.Parameter]:
        """The parameters of this rank's stages: what its optimizer updates (a parameter
        that stages on several ranks read, or that the side values of a model cut from its
        graph read, is on each of them, with the same gradient)."""
        seen: set[int] = set()
        shared = self.layers.shared if self.stage_modules else []
        mine = [q for module in self.stage_modules.values() for q in module.parameters()]
        for p in mine + shared:
            if id(p) not in seen:
                seen.add(id(p))
                yield p

    @property
    def blocks(self) -> dict[int, StageModule]:
        """Deprecated name of :attr:`stage_modules` (warns)."""
        warn_renamed("PipelineRunner.blocks", "PipelineRunner.stage_modules")
        return self.stage_modules

    @property
    def step_count(self) -> int:
        """The steps run so far (the ``step`` a seeded forward is drawn for)."""
        return self._step

    def step(self, x: torch.Tensor, *args: Any, target: torch.Tensor | None = None,
             **kwargs: Any) -> torch.Tensor:
        """Run one optimizer step's forwards and backwards over the micro-batches.

        Every rank passes the same ``x`` (and ``target``, and for a model cut from its
        graph the rest of its call: ``step(idx, mask=mask, target=y)``; tensors whose first
        dimension is the batch's are split into micro-batches, the others given to each):
        the rank holding the first stage feeds it, the one holding the last computes the
        loss. Gradients are replaced, not accumulated: afterwards the parameters of this
        rank's stages hold what one process would accumulate over the same micro-batches
        with the loss divided by their number (the full-batch gradient of a mean-reduced
        loss).

        Returns:
            The step's mean loss, on every rank (on this rank's device).

        Raises:
            ScheduleError: the batch or target does not split into equal micro-batches, or
                a call the model was not captured for (raised on every rank before any
                communication).
            PipelineError: another rank failed (named) or stopped answering.
        """
        xs = self.layers.begin_step(x, args, kwargs, self.microbatches)
        ts = split_microbatches(target, self.microbatches, "the target") \
            if target is not None else None
        step = self._step
        for module in self.stage_modules.values():
            module.step = step
            module.zero_grad(set_to_none=True)
        for p in self.layers.shared:
            p.grad = None
        self._starts.clear()
        losses: list[torch.Tensor] = []
        loss = torch.zeros((), device=self.device)
        try:
            if self._schedule is not None:
                mine = self.stage_modules
                first, last = 0 in mine, len(self.plan.stages) - 1 in mine
                self._schedule.step(
                    arg_mbs=[(xb.to(self.device),) for xb in xs] if first else None,
                    target_mbs=([tb.to(self.device) for tb in ts] if ts is not None
                                else [None] * self.microbatches) if last else None,
                    losses=losses, return_outputs=False)
            self.layers.finish_step(self._group, list(self.parameters()), self.microbatches)
            if losses:
                loss = torch.stack([v.detach().float() for v in losses]).mean()
            dist.broadcast(loss, group_src=self.plan.stages[-1].gpu, group=self._group)
        except Exception as e:
            err = self._board.explain(e, step, self._peers())
            if err is e:
                raise
            raise err from e
        self._step += 1
        return loss

    def _peers(self) -> list[int]:
        gpus = self.plan.stage_gpus
        near = {gpus[k + d] for k in self.stage_modules for d in (-1, 1) if 0 <= k + d < len(gpus)}
        return sorted(dist.get_global_rank(self._group, g) for g in near - {self.rank})

    def measure(self, x: torch.Tensor, *args: Any, target: torch.Tensor | None = None,
                steps: int = 3, store: bool = True, optimizer: torch.optim.Optimizer | None = None,
                **kwargs: Any) -> PipelineExecution:
        """Run and measure steps on every rank: a warm-up step, a memory step, then
        ``steps`` timed steps (see :mod:`chainplan.pipeline.measure`), and check each
        rank's peak against the plan's memory (a :class:`MemoryWarning
        <chainplan.pipeline.measure.MemoryWarning>` names a rank above it).

        Keyword Args:
            target, args, kwargs: as for :meth:`step`.
            steps: timed steps, ≥ 1 (default: 3).
            store: record the execution next to the plan (one ``executions`` row per rank,
                written by rank 0, which must reach the database that holds the plan)
                when the plan is stored (default: True).
            optimizer: this rank's optimizer, stepped after the warm-up and the memory
                steps, so that its state counts in the measured peak and is checked against
                the plan's weight copies (default: None, no optimizer step).

        Returns:
            The same :class:`~chainplan.pipeline.measure.PipelineExecution` on every rank.
        """
        if steps < 1:
            raise ScheduleError(f"steps must be at least 1 (got {steps})")
        return measure_runner(self, lambda: self.step(x, *args, target=target, **kwargs),
                              steps=steps, store=store, optimizer=optimizer)

    @property
    def group(self) -> Any:
        """The process group of every rank the runner talks to."""
        return self._group

    @property
    def plan_order(self) -> bool:
        """Whether the schedule runs in the plan's order (its steady state is measured)."""
        return self._plan_order

    @property
    def forward_starts(self) -> dict[tuple[int, int], float]:
        """The last step's forward start time of each ``(stage, micro-batch)``."""
        return self._starts


def _default_device() -> torch.device:
    # init_process_group() without a backend gives "cpu:gloo,cuda:nccl".
    if "nccl" in str(dist.get_backend()) and torch.cuda.is_available():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")
