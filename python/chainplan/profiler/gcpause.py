"""Cyclic garbage collection held off while memory is measured.

Python's cyclic collector runs whenever allocation counts cross its thresholds, and a
collection inside a measured region frees tensors that became garbage long before it (a
previous step's graph caught in a reference cycle, a test's leftovers). The region's peak
and delta then come out lower by whatever was freed, by chance. While any memory probe is
open the collector is paused; garbage made inside the region waits for the next collection
after it, as it would have waited for the thresholds anyway.

The collector is process-wide, so the pause is counted across threads: the first opener
disables it (if it was enabled) and the last closer restores it.
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_open = 0
_was_enabled = False


def pause() -> None:
    """Holds off cyclic collection until the matching :func:`resume`."""
    global _open, _was_enabled
    with _lock:
        if _open == 0:
            _was_enabled = gc.isenabled()
            gc.disable()
        _open += 1


def resume() -> None:
    """Ends one :func:`pause`; the last one restores the collector as it was."""
    global _open
    with _lock:
        if _open == 0:
            return
        _open -= 1
        if _open == 0 and _was_enabled:
            gc.enable()
