"""The cyclic collector is paused while memory probes are open (profiler/gcpause.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
import torch

from chainplan.profiler.memory import MemoryProbe


@pytest.fixture
def eager_collector() -> Iterator[None]:
    """A collector that runs at the next allocation of a Python container."""
    old = gc.get_threshold()
    gc.collect()
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.enable()


def test_collector_paused_inside_nested_probes_and_restored() -> None:
    assert gc.isenabled()
    with MemoryProbe() as outer:
        assert not gc.isenabled()
        with MemoryProbe():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    assert outer.delta_bytes == 0


def test_a_disabled_collector_stays_disabled() -> None:
    gc.disable()
    try:
        with MemoryProbe():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_older_cyclic_garbage_is_not_freed_inside_the_region(eager_collector: None) -> None:
    class Node:
        def __init__(self) -> None:
            self.me = self
            self.t: torch.Tensor | None = None

    # A 1 MiB tensor that an earlier probe saw allocated, then kept alive only by a cycle
    # that is still in the youngest generation when the region opens.
    with MemoryProbe():
        t = torch.empty(1 << 18)
    gc.disable()
    node = Node()
    node.t = t
    del t, node
    gc.set_threshold(1, 1, 1)
    gc.enable()
    with MemoryProbe() as probe:
        y = torch.ones(1024)
        junk = [[i] for i in range(2000)]  # enough Python allocations to trigger a collection
    assert probe.delta_bytes == y.untyped_storage().nbytes(), probe
    del junk
