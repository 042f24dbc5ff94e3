"""Helpers shared by the profiler tests."""

from __future__ import annotations

import pytest
import torch

__all__ = ["DEVICES", "MiB", "skip_if_no_cuda"]

MiB = 1 << 20

skip_if_no_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA not available")

#: Every device-parametrized test runs on the CPU, and on CUDA when present.
DEVICES = [pytest.param("cpu", id="cpu"), pytest.param("cuda", id="cuda", marks=skip_if_no_cuda)]
