"""Profiler test fixtures: a fixed seed.

python/tests/conftest.py seeds every test too; this one keeps the profiler tests seeded when
they run on their own.
"""

from __future__ import annotations

import pytest
import torch

__all__: list[str] = []


@pytest.fixture(autouse=True)
def manual_seed_zero() -> None:
    torch.manual_seed(0)
