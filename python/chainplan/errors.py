"""The chainplan exception hierarchy (STYLE §3.5.6).

Every error chainplan raises on purpose derives from :class:`ChainplanError`, so one ``except``
catches them all. Errors about a value handed to chainplan also derive from
:class:`ValueError`, and errors about an argument of the wrong type from :class:`TypeError`.
Errors coming from the Go planner carry the Go message unchanged. Warnings chainplan issues
are :class:`ChainplanWarning` instances. This module never imports torch.
"""

from __future__ import annotations

__all__ = [
    "ArgumentTypeError",
    "ChainplanError",
    "ChainplanWarning",
    "InfeasibleBudget",
    "InfeasiblePlanError",
    "MissingSolverError",
    "MissingSolverWarning",
    "NotFoundError",
    "PipelineError",
    "PlanError",
    "ProfileError",
    "QueryError",
    "ScheduleError",
    "SchemaError",
]


class ChainplanError(Exception):
    """Base class of every error raised by chainplan."""


class ProfileError(ChainplanError, ValueError):
    """A model, input or option cannot be profiled as a chain stage.

    It is also a :class:`ValueError`: the cause is always the value handed to the profiler
    (a stage returning a tuple, an unsupported device, an option out of range, ...).

    Attributes:
        stage_index: the 1-based index of the stage that failed (``L+1`` for the loss), or
            None when the error is not about one stage.
        stage_name: that stage's name, or None.
    """

    def __init__(self, message: str, *, stage_index: int | None = None,
                 stage_name: str | None = None) -> None:
        super().__init__(message)
        self.stage_index = stage_index
        self.stage_name = stage_name


class SchemaError(ChainplanError, ValueError):
    """A profile or chain file does not follow its documented schema (names the field)."""


class PlanError(ChainplanError, ValueError):
    """The planner could not produce a plan from the request (unknown algorithm, bad option)."""


class ArgumentTypeError(PlanError, TypeError):
    """An argument has the wrong type (``budget=2.5``, ``slots="10"``); the message names it.

    It is a :class:`TypeError`, as Python's own functions raise for a wrong type, and a
    :class:`PlanError` (so a :class:`ValueError` too), so that code which caught the
    planner's errors before this class existed still does (numpy's ``AxisError`` is both a
    ``ValueError`` and an ``IndexError`` for the same reason).
    """


class QueryError(ChainplanError, ValueError):
    """A SQL query was refused: SQLite cannot run it (syntax, unknown table or column), or it
    would write (every query is read-only). The message is SQLite's, after "bad query:" or
    "query refused:"."""


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


class PipelineError(ChainplanError):
    """A pipeline plan cannot run here or stopped: a torch version outside the range the
    executor was tested with, a world size other than the plan's, a rank that failed or
    stopped answering (the message names it)."""


class NotFoundError(ChainplanError, LookupError):
    """A stored run or plan does not exist."""


class MissingSolverError(ChainplanError):
    """A planner needs a solver program that is not installed, and the request refused the
    fallback (``pipeline_plan(..., require_solver=True)``, ``chainplan pipeline
    --require-solver``). MadPipe schedules with the HiGHS MILP solver of the ``highsbox``
    package, a dependency of chainplan; ``CHAINPLAN_HIGHS`` names another program. The
    message says where the solver was looked for and how to install it."""


class ChainplanWarning(UserWarning):
    """Something chainplan measured or was asked looks wrong but does not stop it, such as a
    profile whose repeated measurements spread too much to be trusted.

    Filter them as a group: ``warnings.simplefilter("error", chainplan.errors.ChainplanWarning)``.
    """


class MissingSolverWarning(ChainplanWarning):
    """A planner could not find its solver program and returned a weaker plan: MadPipe
    without the HiGHS MILP solver returns the best contiguous plan (``plan.fallback ==
    "no-milp-solver"``). Install ``highsbox`` (a dependency of chainplan), or refuse the
    fallback with ``require_solver=True``, which raises :class:`MissingSolverError`."""
