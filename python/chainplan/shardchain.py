"""The chain one rank of FSDP2 runs when each stage is a wrapping unit: gathers counted.

Under ``fully_shard`` on every stage of an ``nn.Sequential`` (``reshard_after_forward``
true), FSDP2's hooks gather a stage's parameters whenever the plan runs it: its forward, each
recomputation of it, and its backward, which also reduce-scatters its gradients. So a
recomputation costs an all-gather in time and holds the gathered unit in memory while it
runs. :func:`sharded_chain` writes that into the chain the planners read, stage by stage,
with the fields they already count when an operation runs (docs/formats.md, chains), so
rotor, rotor-ops, revolve and the offloading planners plan with it and the Go request is
unchanged (docs/distributed.md says why this lives here and not in the Go planner):

* ``fwd_time`` (u_F, every forward and every forward recomputation) and ``recompute_time``
  (u_R) gain the all-gather of the stage's unit, ``u * (shard - 1) / shard / bandwidth``;
  ``bwd_time`` gains it again and the reduce-scatter, which moves as many bytes;
* ``fwd_tmp_bytes`` (o_F), ``recompute_tmp_bytes`` (o_R) and each option's
  ``fwd_tmp_bytes`` gain the unit's unsharded parameters ``u``, held while the stage runs;
  ``bwd_tmp_bytes`` (o_B) gains ``3 u``: the parameters, their unsharded gradients and the
  reduce-scatter's input.

``u`` is the stage's ``param_bytes`` (each stage its own unit). The rest of the rank (the
sharded state, the root's parameters, the unit FSDP prefetches) is
:func:`chainplan.sharded.rank_memory`'s fixed part with ``gathered="chain"``.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from chainplan import _bind
from chainplan.errors import PlanError
from chainplan.source import envelope

__all__ = ["sharded_chain"]


def sharded_chain(source: Any, path: str | os.PathLike[str], *, shard: int,
                  bandwidth: float | None = None) -> Path:
    """Write the chain of ``source`` as a rank of FSDP2 sharding over ``shard`` ranks runs
    it (module docstring) to ``path``, and return the path (a ``plan`` source).

    Args:
        source: a :class:`~chainplan.profiler.document.Profile`, or a chain file's path.
        path: where to write the chain (JSON).

    Keyword Args:
        shard: ranks a parameter is sharded over (≥ 1; 1 gathers nothing).
        bandwidth: the collectives' bytes per second, for the times (default: None: times
            unchanged, memory only).

    Raises:
        PlanError: a shard or bandwidth out of range, or a stage without ``param_bytes``.
    """
    if isinstance(shard, bool) or not isinstance(shard, int) or shard < 1:
        raise PlanError(f"shard must be an integer ≥ 1 (got {shard!r})")
    if bandwidth is not None and not bandwidth > 0:
        raise PlanError(f"bandwidth must be > 0 bytes per second (got {bandwidth!r})")
    # Go reads the source (a Profile's run or file, a chain file) and gives its chain.
    chain = json.loads(_bind.chain(envelope(source, "sharded_chain")))
    if shard > 1:
        for i, stage in enumerate(chain.get("stages", [])):
            _gather(stage, i, shard, bandwidth)
    out = Path(path)
    out.write_text(json.dumps(chain))
    return out


def _gather(stage: dict[str, Any], i: int, shard: int, bandwidth: float | None) -> None:
    """Add stage ``i``'s unit to what each of its operations costs."""
    u = stage.get("param_bytes")
    if not isinstance(u, int) or u < 0:
        raise PlanError(f"stage {i} ({stage.get('name', '?')}) has no param_bytes: the "
                        "chain cannot say what FSDP gathers for it")
    moved = u * (shard - 1) / shard
    t = moved / bandwidth if bandwidth else 0.0
    stage["fwd_time"] = stage.get("fwd_time", 0.0) + t
    stage["bwd_time"] = stage.get("bwd_time", 0.0) + 2 * t
    stage["fwd_tmp_bytes"] = (stage.get("fwd_tmp_bytes") or 0) + u
    stage["bwd_tmp_bytes"] = (stage.get("bwd_tmp_bytes") or 0) + 3 * u
    if "recompute_time" in stage:
        stage["recompute_time"] += t
    if "recompute_tmp_bytes" in stage:
        stage["recompute_tmp_bytes"] += u
    for option in stage.get("options") or []:
        option["fwd_tmp_bytes"] = option.get("fwd_tmp_bytes", 0) + u
        if "recompute_time" in option:
            option["recompute_time"] += t
