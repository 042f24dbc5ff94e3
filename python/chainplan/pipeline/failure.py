"""A rank that fails must not leave the others waiting without a word.

The pipeline's process group has a timeout: a rank waiting for a peer that failed gives up
after it. A failing rank writes its message to the process group's store before raising its
own error; a rank that then gives up reads the store and raises a
:class:`~chainplan.errors.PipelineError` naming the rank that failed and why, rather than
only the timeout of the receive it was blocked in.
"""

from __future__ import annotations

import re
from typing import Any

from chainplan.errors import PipelineError

__all__ = ["FailureBoard"]

_TIMEOUT = re.compile(r"time[d ]?\s*out|timeout", re.I)
_CLOSED = re.compile(r"connection (closed|reset)", re.I)


class FailureBoard:
    """The failures of one runner's ranks, in the default process group's store.

    Args:
        store: the store (:func:`chainplan.pipeline.runtime.failure_store`), or None: the
            failed rank is then not named, only the timeout.
        prefix: keys of this runner (the same on every rank).
        rank, world: this rank and the number of ranks.
        timeout_s: the process group's timeout (seconds), for messages.
    """

    def __init__(self, store: Any, prefix: str, rank: int, world: int,
                 timeout_s: float) -> None:
        self.store, self.prefix = store, prefix
        self.rank, self.world, self.timeout_s = rank, world, timeout_s

    def _key(self, rank: int) -> str:
        return f"{self.prefix}/failed/{rank}"

    def _read(self, rank: int) -> str | None:
        if self.store is None:
            return None
        try:
            if not self.store.check([self._key(rank)]):
                return None
            return bytes(self.store.get(self._key(rank))).decode(errors="replace")
        except RuntimeError:  # the store went away with its host rank
            return None

    def explain(self, err: BaseException, step: int, peers: list[int]) -> BaseException:
        """The error this rank should raise for ``err``, which stopped it in ``step``.

        A failure of another rank already on the board makes this one a consequence: a
        :class:`PipelineError` naming that rank and its message. Otherwise this rank is the
        first to fail: its message goes on the board, and ``err`` is returned as it is
        (the user's own error keeps its type), unless it is a timeout or a closed
        connection, which become a :class:`PipelineError` naming the ``peers`` this rank
        talks to (a failed rank that hosted the store takes its message with it). An
        error every rank of its data-parallel group raised alike (``raised_on_every_rank``,
        :mod:`chainplan.agreed`) is no consequence of another's: returned as it is.
        """
        if getattr(err, "raised_on_every_rank", False):
            return err
        others = [(r, m) for r in range(self.world) if r != self.rank
                  if (m := self._read(r)) is not None]
        if others:
            named = "; ".join(f"rank {r} failed: {m}" for r, m in others)
            return PipelineError(f"rank {self.rank} stopped in step {step} because {named} "
                                 f"(here: {type(err).__name__}: {_short(err)})")
        cause = _root(err)
        text = f"{type(cause).__name__} in step {step}: {_short(cause)}"
        if self.store is not None:
            try:
                self.store.set(self._key(self.rank), text)
            except RuntimeError:
                pass
        if _TIMEOUT.search(str(err)):
            return PipelineError(
                f"rank {self.rank} waited {self.timeout_s:g} s for ranks {peers} in step "
                f"{step} and gave up, and no rank reported a failure: one of them died or is "
                f"stuck ({_short(err)})")
        if _CLOSED.search(str(err)):
            return PipelineError(
                f"rank {self.rank} lost its connection to one of ranks {peers} in step {step}: "
                f"that process ended (see its own error) ({_short(err)})")
        return err


def _root(err: BaseException) -> BaseException:
    """The innermost cause: torch wraps a stage's error in its own RuntimeError."""
    while err.__cause__ is not None:
        err = err.__cause__
    return err


def _short(err: BaseException, limit: int = 300) -> str:
    text = " ".join(str(err).split())
    return text if len(text) <= limit else text[:limit] + "…"
