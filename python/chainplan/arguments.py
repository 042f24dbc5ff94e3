"""Reading the arguments the user-facing calls share, each checked before any work with a
message naming the argument. This module never imports torch, except to measure a bandwidth
``"auto"`` asks for that no stored run has recorded (:func:`bandwidth_or_auto`)."""

from __future__ import annotations

import math

from chainplan import _bind
from chainplan.errors import ArgumentTypeError, PlanError
from chainplan.source import run_id_of

__all__ = ["bandwidth", "bandwidth_or_auto", "typed"]


def typed(value: object) -> str:
    """``value`` and its type, for messages: ``2.0 (float)``."""
    return f"{value!r} ({type(value).__name__})"


def bandwidth(value: object) -> float:
    """A link's bandwidth in bytes per second: a positive, finite number, or a string with
    the CLI's rule (``"12GB/s"``, ``"1.2e10"``; docs/CLI.md, "Sizes and bandwidths").

    Raises:
        ArgumentTypeError: neither a number nor a string.
        PlanError: not positive and finite, or a string that is no bandwidth.
    """
    if isinstance(value, str):
        return _bind.parse_bandwidth(value)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ArgumentTypeError(f"bandwidth must be bytes per second (an int or a float) or a "
                                f"string such as '12GB/s' (got {typed(value)})")
    if not (math.isfinite(value) and value > 0):
        raise PlanError(f"bandwidth must be a positive, finite number of bytes per second "
                        f"(got {value!r})")
    return float(value)


def bandwidth_or_auto(value: object, source: object) -> float:
    """Resolve plan()'s bandwidth argument to bytes per second: :func:`bandwidth`'s rule,
    and ``"auto"`` for a stored profile.

    A positive, finite int or float is bytes per second; a string is read by the Go parser
    with the CLI's rule (a size with an optional ``/s``: ``"12GB/s"``, ``"1.2e10"``; docs/CLI.md,
    "Sizes and bandwidths"), except ``"auto"``: the bandwidth recorded with the run, else
    measured once on the profile's device and recorded.
    """
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ArgumentTypeError(f"bandwidth must be bytes per second (an int or a float), a "
                                f"string such as '12GB/s', or 'auto' (got {typed(value)})")
    if not isinstance(value, str) or value.strip().lower() != "auto":
        return bandwidth(value)
    run_id = run_id_of(source, "bandwidth='auto'")
    if run_id is None:
        raise PlanError("bandwidth='auto' needs a stored profile (a Profile with a run id, "
                        "or a run id) to record the measurement with")
    stored = _bind.latest_bandwidth(run_id)
    if stored > 0:
        return stored
    from chainplan.profiler.bandwidth import measure_bandwidth  # torch: optional, heavy

    device = str(_bind.run(run_id)["device"])
    bps, method = measure_bandwidth(device)
    return _bind.record_bandwidth(run_id, bps, device, method)
