"""Measuring the host-device copy bandwidth that offloading plans (pofo) depend on."""

from __future__ import annotations

import statistics
import time

import torch

from chainplan.errors import ProfileError

__all__ = ["measure_bandwidth"]


def measure_bandwidth(device: torch.device | str, *, nbytes: int = 64 << 20,
                      repeats: int = 5) -> tuple[float, str]:
    """Measure the copy bandwidth between host memory and ``device``, in bytes per second.

    On a GPU: copies of ``nbytes`` between a pinned host buffer and the device, both ways,
    timed with CUDA events; the slower direction's median counts, since an offloading plan
    needs both. On the CPU, where the executor's "offload" is a host copy: the median of
    timed clones of an ``nbytes`` buffer.

    Returns:
        The bandwidth (bytes/s) and a description of the method.

    Raises:
        ProfileError: a size or repeat count below 1, or an unsupported device.
    """
    if nbytes < 1 or repeats < 1:
        raise ProfileError(f"nbytes and repeats must be positive (got {nbytes}, {repeats})")
    dev = torch.device(device)
    n = max(1, nbytes // 4)
    if dev.type == "cuda":
        host = torch.empty(n, dtype=torch.float32, pin_memory=True)
        dev_buf = torch.empty(n, dtype=torch.float32, device=dev)
        times: dict[str, list[float]] = {"h2d": [], "d2h": []}
        for r in range(repeats + 1):
            for name, (dst, src) in {"h2d": (dev_buf, host), "d2h": (host, dev_buf)}.items():
                start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
                start.record()
                dst.copy_(src, non_blocking=True)
                end.record()
                end.synchronize()
                if r > 0:  # the first round warms up
                    times[name].append(start.elapsed_time(end) / 1e3)
        worst = max(statistics.median(times["h2d"]), statistics.median(times["d2h"]))
        return n * 4 / worst, f"pinned copies of {n * 4} B, slower direction"
    if dev.type != "cpu":
        raise ProfileError(f"cannot measure a copy bandwidth for device {dev}")
    buf = torch.empty(n, dtype=torch.float32).fill_(1.0)
    ts = []
    for r in range(repeats + 1):
        t0 = time.perf_counter()
        out = buf.clone()
        dt = time.perf_counter() - t0
        del out
        if r > 0:
            ts.append(dt)
    return n * 4 / statistics.median(ts), f"host clones of {n * 4} B"
