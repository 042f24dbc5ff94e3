"""Reading a node of a captured graph: an ATen call's arguments by their schema names, and
the fake tensor its value was traced as (the rewrites at capture read both)."""

from __future__ import annotations

from typing import Any

import torch
from torch import fx

__all__ = ["arguments", "value_of"]


def arguments(node: fx.Node) -> dict[str, Any]:
    """An ATen call's arguments by their schema names, defaults filled in."""
    schema = node.target._schema  # type: ignore[union-attr]
    out: dict[str, Any] = {}
    for i, a in enumerate(schema.arguments):
        if i < len(node.args):
            out[a.name] = node.args[i]
        elif a.name in node.kwargs:
            out[a.name] = node.kwargs[a.name]
        else:
            out[a.name] = a.default_value if a.has_default_value() else None
    return out


def value_of(node: Any) -> torch.Tensor | None:
    """The tensor ``node`` was traced as (a fake tensor), or None (not a node, not a
    tensor)."""
    v = node.meta.get("val") if isinstance(node, fx.Node) else None
    return v if isinstance(v, torch.Tensor) else None
