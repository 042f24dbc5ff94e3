"""Hand-written ``chainplan.pipeline/v1`` plans for the executor's tests.

:func:`modulo_plan` builds a valid 1-periodic pattern for any stage-to-GPU map by modulo
scheduling one micro-batch: its operations in dependency order, each at the earliest integer
time after its input whose slot, taken modulo the period, is free on its GPU (the period is
the most loaded GPU's work, so a slot always exists). Transfers take no time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

__all__ = ["modulo_plan", "plan_doc", "spec_1f1b_star"]


def plan_doc(gpus: int, stage_gpus: Sequence[int], layers: Sequence[int], period: float,
             pattern: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """A plan document: stage k has ``layers[k]`` layers on GPU ``stage_gpus[k]``."""
    stages, first = [], 1
    for g, n in zip(stage_gpus, layers, strict=True):
        stages.append({"first": first, "last": first + n - 1, "gpu": g})
        first += n
    doc = {"format": "chainplan.pipeline/v1", "algo": "hand", "gpus": gpus,
           "memory_bytes": 1e9, "bandwidth": 1e10, "weight_copies": 2,
           "activation_model": "saved", "period": period, "stages": stages,
           "pattern": pattern, "memory_per_gpu": [1e6] * gpus,
           "contiguous": len(set(stage_gpus)) == len(stage_gpus)}
    doc.update(extra)
    return doc


def _free(busy: list[tuple[int, int]], start: int, dur: int, period: int) -> bool:
    s = start % period
    for b, d in busy:
        for shift in (-period, 0, period):
            if s < b + shift + d and b + shift < s + dur:
                return False
    return True


def modulo_plan(stage_gpus: Sequence[int], *, fwd: int = 1, bwd: int = 2,
                layers: Sequence[int] | None = None) -> dict[str, Any]:
    """A valid plan for ``stage_gpus`` with integer forward/backward times per stage: the
    smallest period from the most loaded GPU's work up at which every operation finds a
    slot (a GPU's free time can be cut into gaps too short for a backward)."""
    gpus = max(stage_gpus) + 1
    period = max(sum(fwd + bwd for g in stage_gpus if g == p) for p in range(gpus))
    while True:
        pattern = _modulo(stage_gpus, fwd, bwd, period)
        if pattern is not None:
            return plan_doc(gpus, stage_gpus, layers or [1] * len(stage_gpus), period,
                            pattern)
        period += 1


def _modulo(stage_gpus: Sequence[int], fwd: int, bwd: int,
            period: int) -> list[dict[str, Any]] | None:
    n = len(stage_gpus)
    busy: dict[int, list[tuple[int, int]]] = {g: [] for g in set(stage_gpus)}
    pattern: list[dict[str, Any]] = []
    t = 0
    chain = [("F", k, fwd) for k in range(n)] + [("B", k, bwd) for k in reversed(range(n))]
    for op, k, d in chain:
        g = stage_gpus[k]
        for _ in range(period):
            if _free(busy[g], t, d, period):
                break
            t += 1
        else:
            return None
        busy[g].append((t % period, d))
        pattern.append({"op": op, "stage": k, "start": t % period, "duration": d,
                        "shift": t // period})
        end = t + d
        nxt = k + 1 if op == "F" else k - 1
        if 0 <= nxt < n and stage_gpus[nxt] != g:
            pattern.append({"op": "CF" if op == "F" else "CB", "stage": min(k, nxt),
                            "start": end % period, "duration": 0, "shift": end // period})
        t = end
    return pattern


def spec_1f1b_star() -> dict[str, Any]:
    """The worked 1F1B* example of specs/madpipe.md §1.7: four stages with (U_F, U_B) =
    (1,2), (1,1), (2,2), (1,1) at T = 6, groups [2, 2, 1, 1]; zero-time transfers."""
    ops = [("F", 0, 0, 1, 0), ("B", 0, 3, 2, 1), ("F", 1, 1, 1, 0), ("B", 1, 2, 1, 1),
           ("F", 2, 2, 2, 0), ("B", 2, 0, 2, 1), ("F", 3, 4, 1, 0), ("B", 3, 5, 1, 0)]
    pattern = [{"op": o, "stage": k, "start": s, "duration": d, "shift": h}
               for o, k, s, d, h in ops]
    for k, (cf, cb) in enumerate([((1, 0), (5, 1)), ((2, 0), (2, 1)), ((4, 0), (0, 1))]):
        pattern.append({"op": "CF", "stage": k, "start": cf[0], "duration": 0, "shift": cf[1]})
        pattern.append({"op": "CB", "stage": k, "start": cb[0], "duration": 0, "shift": cb[1]})
    return plan_doc(4, [0, 1, 2, 3], [1, 1, 1, 1], 6, pattern)


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc)
