"""A chain file on which the Go planners return the three kinds of plans the executor must
run on four devices: contiguous with an idle device, PipeDream's, and a MadPipe plan with a
device holding two non-adjacent stages (found by a sweep over memories, docs/pipeline.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["EIGHT", "write"]

# Eight layers; the 4-time layers 3 and 6 and the 400-byte outputs make the partition
# matter. Backward = 2 × forward; weights 100 bytes each.
_FWD = [1, 1, 4, 1, 1, 4, 1, 1]
_ACT = [100, 400, 100, 100, 400, 100, 100, 400, 10]
EIGHT: dict[str, Any] = {
    "format": "chainplan.chain/v1", "input_bytes": _ACT[0],
    "stages": [{"name": f"l{i + 1}", "fwd_time": f, "bwd_time": 2 * f,
                "out_bytes": _ACT[i + 1], "saved_bytes": 2 * _ACT[i + 1], "fwd_tmp_bytes": 0,
                "bwd_tmp_bytes": 0, "param_bytes": 100} for i, f in enumerate(_FWD)],
}


def write(path: Path) -> Path:
    path.write_text(json.dumps(EIGHT))
    return path
