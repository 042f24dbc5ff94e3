"""Which schedule runs a plan: torch's built-in one where the plan's order is one of them,
else the plan's own order through torch's runtime (docs/pipeline.md, "Which schedule
runs").

This module never imports torch.
"""

from __future__ import annotations

from typing import Any, Literal

from chainplan.errors import ScheduleError
from chainplan.pipeline.document import PipelineDocument
from chainplan.pipeline.order import builtin_schedule

__all__ = ["ScheduleChoice", "choose", "interleaved_candidate"]

#: ``auto``: a built-in schedule where the plan's order is one, else the plan's; ``plan``:
#: always the plan's order (through torch's runtime); ``1f1b``/``gpipe``: torch's built-in
#: on the plan's partition whatever the plan's order (for comparisons).
ScheduleChoice = Literal["auto", "plan", "1f1b", "gpipe"]


def interleaved_candidate(plan: PipelineDocument) -> bool:
    """Whether the plan puts stage s on rank s mod P with several stages per rank, the
    shape of torch's ``ScheduleInterleaved1F1B``."""
    s, p = len(plan.stages), plan.gpus
    return s > p and s % p == 0 and all(st.gpu == st.index % p for st in plan.stages)


def choose(plan: PipelineDocument, orders: Any, n: int, choice: str) -> tuple[str, str]:
    """The built-in schedule to run (``""``: the plan's order) and why.

    Raises:
        ScheduleError: an unknown choice, or a built-in that cannot hold the partition.
    """
    if choice not in ("auto", "plan", "1f1b", "gpipe"):
        raise ScheduleError(f"schedule: unknown value {choice!r} (want auto, plan, 1f1b or "
                            f"gpipe)")
    if choice == "plan":
        return "", "asked for the plan's order (schedule='plan')"
    if choice == "auto":
        return builtin_schedule(plan, orders, n)
    name = {"1f1b": "Schedule1F1B", "gpipe": "ScheduleGPipe"}[choice]
    if len(plan.stages) != plan.gpus or any(s.gpu != s.index for s in plan.stages):
        raise ScheduleError(f"schedule={choice!r}: {name} puts stage s alone on rank s, and "
                            f"the plan's stages are on GPUs {list(plan.stage_gpus)}")
    if name == "Schedule1F1B" and n < len(plan.stages):
        raise ScheduleError(f"schedule='1f1b': Schedule1F1B needs micro-batches ≥ stages "
                            f"({n} < {len(plan.stages)})")
    return name, f"asked for {name} (schedule={choice!r})"
