"""profile()'s timing rounds: after each stage and the loss is measured once, every one of
them is timed once more per round, the rounds going over the whole chain.

Why rounds: on a shared host a stretch of contention of a second or more slowed every
repeat of the one stage measuring at the time, when its repeats ran back to back, so that
its median was off by 25-65x (issue 20: recorded against profiled chain times
0.016-0.041). In rounds, such a stretch slows one run of each of the stages it spans, which
the medians drop."""

from __future__ import annotations

import dataclasses
import statistics
from typing import TypeVar

import torch
from torch import nn

from chainplan.profiler.labels import naming_stage
from chainplan.profiler.lossmeasure import LossFn, LossMeasurement, time_loss
from chainplan.profiler.stagemeasure import StageMeasurement, time_stage

__all__ = ["Rounds", "with_rounds"]

_M = TypeVar("_M", StageMeasurement, LossMeasurement)


def with_rounds(m: _M, fwd: list[float], bwd: list[float]) -> _M:
    """``m`` (a stage's or the loss's measurement) with the times of further rounds added
    to its own, medians taken again; a stage without a backward keeps none."""
    fwd_times = m.fwd_times_s + tuple(fwd)
    bwd_times = m.bwd_times_s + tuple(bwd) if m.bwd_times_s else ()
    return dataclasses.replace(m, fwd_times_s=fwd_times, bwd_times_s=bwd_times,
                               fwd_time_s=statistics.median(fwd_times),
                               bwd_time_s=statistics.median(bwd_times) if bwd_times else 0.0)


class Rounds:
    """The stages' and the loss's times, each timed once more per round, the rounds going
    over the whole chain (:func:`~chainplan.profiler.stagemeasure.time_stage`,
    :func:`~chainplan.profiler.lossmeasure.time_loss`): a stretch of contention on a shared
    host then slows one round, which the medians drop, not every run of one stage."""

    def __init__(self, stages: list[nn.Module], names: list[str],
                 measured: list[tuple[StageMeasurement, int]], first: torch.Tensor,
                 device: torch.device, loss: tuple[LossFn, torch.Tensor, str] | None) -> None:
        self.stages, self.names, self.measured = stages, names, measured
        self.inputs = [first] + [m.output for m, _ in measured[:-1]]
        self.device, self.loss = device, loss

    def run(self, rounds: int, lm: LossMeasurement | None
            ) -> tuple[list[tuple[StageMeasurement, int]], LossMeasurement | None]:
        fwd: list[list[float]] = [[] for _ in range(len(self.stages) + 1)]
        bwd: list[list[float]] = [[] for _ in range(len(self.stages) + 1)]
        for _ in range(rounds):
            for k, (stage, x) in enumerate(zip(self.stages, self.inputs, strict=True)):
                with naming_stage(k + 1, self.names[k]):
                    f, b = time_stage(stage, x, device=self.device)
                fwd[k].append(f)
                if b is not None:
                    bwd[k].append(b)
            if self.loss is not None:
                loss_fn, target, loss_name = self.loss
                with naming_stage(len(self.stages) + 1, f"loss {loss_name}"):
                    f, b = time_loss(loss_fn, self.measured[-1][0].output, target,
                                     device=self.device)
                fwd[-1].append(f)
                bwd[-1].append(b)
        measured = [(with_rounds(m, fwd[k], bwd[k]), n)
                    for k, (m, n) in enumerate(self.measured)]
        if lm is not None:
            lm = with_rounds(lm, fwd[-1], bwd[-1])
        return measured, lm
