"""Which storage a graph node writes or aliases, read from ATen's operator schemas.

Capture refuses a model that updates its own arguments in place; partitioning keeps a
written tensor with the stage that writes it; stages and packs follow views back to the
tensor whose storage they keep alive. All of them ask the two questions here.
"""

from __future__ import annotations

import torch
from torch import fx

__all__ = ["alias_root", "writes"]


def writes(node: fx.Node) -> list[fx.Node]:
    """The nodes whose tensors ``node`` updates in place (schema ``Tensor(a!)`` arguments,
    and the running statistics of a training-mode batch or instance norm)."""
    target = node.target
    if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
        return []
    out: list[fx.Node] = []
    for i, a in enumerate(target._schema.arguments):
        info = a.alias_info
        if info is not None and info.is_write:
            v = node.args[i] if i < len(node.args) else node.kwargs.get(a.name)
            if isinstance(v, fx.Node):
                out.append(v)
    if target in _RUNNING_STATS and len(node.args) > 5 and node.args[5]:
        out.extend(v for v in node.args[3:5] if isinstance(v, fx.Node))
    return out


# ATen's composite norms update running statistics without saying so in their schemas.
_RUNNING_STATS = {torch.ops.aten.batch_norm.default, torch.ops.aten.instance_norm.default}


def alias_root(node: fx.Node) -> fx.Node:
    """The node owning the storage ``node``'s value lives in: views and in-place results
    are followed back to the tensor they alias."""
    while node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload):
        returns = node.target._schema.returns
        if not returns or returns[0].alias_info is None or not node.args:
            break
        base = node.args[0]
        if not isinstance(base, fx.Node):
            break
        node = base
    return node
