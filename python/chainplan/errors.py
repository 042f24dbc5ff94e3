"""The chainplan exception hierarchy (STYLE §3.5.6).

Every error chainplan raises on purpose derives from :class:`ChainplanError`, so one ``except``
catches them all. Errors about a value handed to chainplan also derive from
:class:`ValueError`. Errors coming from the Go planner carry the Go message unchanged.
This module never imports torch.
"""

from __future__ import annotations

__all__ = [
    "ChainplanError",
    "InfeasibleBudget",
    "InfeasiblePlanError",
    "NotFoundError",
    "PlanError",
    "ProfileError",
    "ScheduleError",
    "SchemaError",
]


class ChainplanError(Exception):
    """Base class of every error raised by chainplan."""


class ProfileError(ChainplanError, ValueError):
    """A model, input or option cannot be profiled as a chain stage.

    It is also a :class:`ValueError`: the cause is always the value handed to the profiler
    (a stage returning a tuple, an unsupported device, an option out of range, ...).
    """


class SchemaError(ChainplanError, ValueError):
    """A profile or chain file does not follow its documented schema (names the field)."""


class PlanError(ChainplanError, ValueError):
    """The planner could not produce a plan from the request (unknown algorithm, bad option)."""


class InfeasibleBudget(PlanError):
    """No schedule fits the memory budget.

    Attributes:
        min_budget_bytes: the smallest budget (bytes) at which the algorithm finds a
            schedule, or 0 when no budget works.
    """

    def __init__(self, message: str, *, min_budget_bytes: int = 0) -> None:
        super().__init__(message)
        self.min_budget_bytes = min_budget_bytes


#: The name STYLE.md uses for :class:`InfeasibleBudget`.
InfeasiblePlanError = InfeasibleBudget


class ScheduleError(ChainplanError, ValueError):
    """A schedule is invalid or does not match the model it is applied to."""


class NotFoundError(ChainplanError, LookupError):
    """A stored run or plan does not exist."""
