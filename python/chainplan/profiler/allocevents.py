"""The CPU allocator's allocation and free events, recorded in program order.

:class:`~chainplan.profiler.memory.MemoryProbe` measures the CPU by replaying these events
(its module docstring says why the profiler's allocator events and not a dispatch mode):
:class:`AllocRecorder` turns PyTorch's profiler on for allocator events only and returns
them, with the probes' markers, as one ordered list.
"""

from __future__ import annotations

from typing import Any

import torch
from torch._C import _autograd
from torch._C._profiler import (
    ProfilerActivity,
    ProfilerConfig,
    ProfilerState,
    _ExperimentalConfig,
)

__all__ = ["MARK_PREFIX", "AllocRecorder", "Item", "prefer_legacy"]

# Names of the profiler ranges that mark probe boundaries in the recorded event stream.
MARK_PREFIX = "chainplan::memory_probe#"

# One recorded item: an int is an allocation (> 0) or a free (< 0) in bytes, a str a marker.
Item = int | str


# Use the legacy profiler where this PyTorch has it (tests turn it off to try Kineto's).
prefer_legacy = True


class AllocRecorder:
    """Records CPU allocator events and probe markers on one thread, in program order.

    The legacy profiler keeps each thread's events in the order they happened, so a marker and
    the allocations around it are ordered exactly; it is used when this PyTorch has it. The
    Kineto profiler is the fallback: its events are ordered by timestamp, and an allocation
    with the same nanosecond timestamp as a marker may land on either side of it.
    """

    def __init__(self) -> None:
        self._legacy = prefer_legacy and hasattr(_autograd, "_enable_profiler_legacy")

    def start(self) -> None:
        state = ProfilerState.CPU if self._legacy else ProfilerState.KINETO
        config = ProfilerConfig(state, False, True, False, False, False, _ExperimentalConfig())
        if self._legacy:
            _autograd._enable_profiler_legacy(config)
        else:
            activities = {ProfilerActivity.CPU}
            _autograd._prepare_profiler(config, activities)
            _autograd._enable_profiler(config, activities)

    @staticmethod
    def mark(label: str) -> None:
        with torch.autograd.profiler.record_function(label):
            pass

    def stop(self) -> list[Item]:
        rows: list[tuple[float, int, int, Item]] = []
        if self._legacy:
            threads: list[list[Any]] = _autograd._disable_profiler_legacy()
            for tid, events in enumerate(threads):
                for seq, ev in enumerate(events):
                    kind = ev.kind()
                    if kind == "memory_alloc":
                        nbytes = int(ev.cpu_memory_usage())
                        if nbytes:
                            rows.append((float(ev.start_us()), tid, seq, nbytes))
                    elif kind == "push":
                        name = str(ev.name())
                        if name.startswith(MARK_PREFIX):
                            rows.append((float(ev.start_us()), tid, seq, name))
        else:
            result = _autograd._disable_profiler()
            cpu = _autograd.DeviceType.CPU
            kineto_events: list[Any] = result.events()
            for seq, ev in enumerate(kineto_events):
                name = str(ev.name())
                if name == "[memory]":
                    nbytes = int(ev.nbytes())
                    if nbytes and ev.device_type() == cpu:
                        rows.append((int(ev.start_ns()), 0, seq, nbytes))
                elif name.startswith(MARK_PREFIX):
                    rows.append((int(ev.start_ns()), 0, seq, name))
        # Kineto's timestamps stay integers: as floats, epoch nanoseconds lose about 256 ns.
        # Timestamps are non-decreasing within a thread, so this keeps each thread's own order
        # and interleaves threads by time.
        rows.sort(key=lambda row: (row[0], row[1], row[2]))
        return [row[3] for row in rows]
