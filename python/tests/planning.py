"""Plans of a chain for the tests, through the one crossing ``chainplan.plan`` uses."""

from __future__ import annotations

import json
from typing import Any

from chainplan import _bind


def plan_chain(chain: str, request: dict[str, Any]) -> str:
    """The plan document (JSON) of ``chain`` (a ``chainplan.chain/v1`` or v2 text) as
    ``request`` asks (service.Request's JSON form: ``algo``, ``budget_bytes`` or
    ``budget``, ``min_budget``, ``slots``, ...), through ``pybind.Plan``."""
    return json.dumps(_bind.plan({"chain": chain}, request)["plan"])
