"""Turning the steps ``chainplan.record`` saw into profile rows (see ``hooks.py``).

Times come from the timed steps, memory from the one measured step, and both go through the
rules ``profile()`` uses (``stagerows.stage_rows``, ``stagerows.loss_rows``,
``measure.chain_end``), so that a recorded and a profiled run of one model have the same columns.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.profiler.lossmeasure import LossMeasurement, chain_end
from chainplan.profiler.sizes import nbytes
from chainplan.profiler.stagemeasure import StageMeasurement
from chainplan.profiler.stagerows import held_during, loss_rows, stage_rows
from chainplan.profiler.stepmemory import StepMemory
from chainplan.profilerow import ProfileRow

__all__: list[str] = []


class Clock:
    """Timestamps: CUDA events on a GPU (resolved later), nanoseconds on the CPU."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"

    def now(self) -> Any:
        if self.cuda:
            ev = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
            ev.record()
            return ev
        return time.perf_counter_ns()

    def seconds(self, a: Any, b: Any) -> float:
        if self.cuda:
            return float(a.elapsed_time(b)) / 1e3
        return float(b - a) / 1e9


@dataclass
class Step:
    input_shape: tuple[int, ...]
    dtype: str
    memory: StepMemory | None = None
    probed: bool = False  # measured for memory (complete or not): its times are not used
    fwd: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    bwd_start: dict[int, Any] = field(default_factory=dict)
    bwd_end: dict[int, Any] = field(default_factory=dict)
    in_bytes: dict[int, int] = field(default_factory=dict)
    # The stages whose forward drew random numbers, on a step checked for it (None: not
    # checked; the probed steps are not, the state's copy would count in their memory).
    random: set[int] | None = None
    loss_fwd: tuple[Any, Any] | None = None
    loss_bwd: list[Any] = field(default_factory=list)  # [start] then [start, end]
    # The loss is a_L itself (computed in the last stage, as a fused head computes it).
    loss_is_end: bool = False


def timed_steps(steps: list[Step], n: int, warmup: int,
                shape: tuple[int, ...] | None) -> list[Step]:
    """The steps that give times: complete (every stage forward and backward), after the
    warm-up, not measured for memory, and with the measured step's input shape."""
    out = []
    for i, s in enumerate(steps):
        if i < warmup or s.probed or (shape is not None and s.input_shape != shape):
            continue
        if len(s.fwd) == n and all(k in s.bwd_start and k in s.bwd_end for k in range(1, n + 1)):
            out.append(s)
    return out


def recorded_rows(steps: list[Step], memory: StepMemory, stages: list[nn.Module],
                  names: list[str], clock: Clock, *, warmup: int, loss_name: str,
                  resident: int = 0, holds_end: bool = False) -> list[ProfileRow] | None:
    """The profile's rows, or None when no step can be timed.

    Args:
        steps: every step recorded.
        memory: the complete memory measurement of one of them.
        stages, names: the chain's stages and their names.
        clock: the clock the steps' timestamps come from.

    Keyword Args:
        warmup: the number of first steps to leave out.
        loss_name: the loss's name ("none" without a loss).
        resident: bytes the side values of a model split from its graph hold through the
            step, in every overhead as ``profile()`` counts them.
        holds_end: the model's output keeps a_L to the end of the step (its own loss next
            to its logits), counted as ``profile()`` counts it.
    """
    if clock.cuda:
        torch.cuda.synchronize()
    measured_step = next(s for s in steps if s.memory is memory)
    timed = timed_steps(steps, len(stages), warmup, measured_step.input_shape)
    if not timed:
        return None
    sec = clock.seconds
    # The measurements profile() would make, so that both share stage_rows, loss_rows
    # and chain_end: one rule for the columns.
    measured: list[tuple[StageMeasurement, int]] = []
    random = set().union(*(s.random for s in steps if s.random is not None))
    for k, (st, mem) in enumerate(zip(stages, memory.stages(), strict=True), start=1):
        fwd = tuple(sec(*s.fwd[k]) for s in timed)
        bwd = tuple(max(0.0, sec(s.bwd_start[k], s.bwd_end[k])) for s in timed)
        m = StageMeasurement(
            fwd_time_s=statistics.median(fwd), bwd_time_s=statistics.median(bwd),
            out_bytes=mem.out_bytes, saved_bytes=mem.saved_bytes,
            fwd_tmp_bytes=mem.fwd_tmp_bytes, bwd_tmp_bytes=mem.bwd_tmp_bytes,
            param_bytes=sum(nbytes(p) for p in st.parameters()), fwd_times_s=fwd,
            bwd_times_s=bwd, input_grad_bytes=mem.input_grad_bytes,
            fwd_retained_bytes=mem.fwd_retained_bytes, fwd_peak_bytes=mem.fwd_peak_bytes,
            kept_bytes=mem.kept_bytes, output_kept=mem.output_kept, output=torch.empty(0),
            draws_random=k in random)
        measured.append((m, measured_step.in_bytes.get(k, 0)))
    lm = _loss_measurement(timed, memory, clock)
    # What the executor holds beside the stages' own measurements, as profile() counts it
    # (a tied weight's gradient), and the random-number state of each stage that drew
    # random numbers on a step checked for it (replay_bytes).
    device = torch.device("cuda" if clock.cuda else "cpu")
    rows = stage_rows(measured, names, lm, resident,
                      held=held_during(list(stages), measured, device), holds_end=holds_end)
    end = chain_end(measured[-1][0], lm, holds_end=holds_end)
    rows.extend(loss_rows(len(stages) + 1, measured[-1][0].out_bytes, lm, loss_name, end,
                          resident))
    return rows


def _loss_measurement(timed: list[Step], memory: StepMemory,
                      clock: Clock) -> LossMeasurement | None:
    mem = memory.loss()
    if mem is None:
        return None
    with_loss = [s for s in timed if s.loss_fwd is not None and len(s.loss_bwd) == 2]
    if not with_loss:
        raise ProfileError("record(loss_fn=...) saw no timed step compute its loss with "
                           "rec.loss_fn (or the loss module given) and run its backward")
    fwd = tuple(clock.seconds(*s.loss_fwd) for s in with_loss if s.loss_fwd)
    bwd = tuple(max(0.0, clock.seconds(*s.loss_bwd)) for s in with_loss)
    return LossMeasurement(
        fwd_time_s=statistics.median(fwd), bwd_time_s=statistics.median(bwd),
        fwd_tmp_bytes=mem.fwd_tmp_bytes, bwd_tmp_bytes=mem.bwd_tmp_bytes, fwd_times_s=fwd,
        bwd_times_s=bwd, grad_bytes=mem.grad_bytes, saved_bytes=mem.saved_bytes,
        input_kept=mem.input_kept, held_bytes=mem.held_bytes)
