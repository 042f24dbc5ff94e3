"""The two forms of a language model's head: fused with its loss, or PyTorch's.

The capture fuses a language model's head with its cross-entropy
(:mod:`chainplan.graph.fuseloss`): one call of
:func:`~chainplan.runtime.linearloss.linear_cross_entropy`, which never holds the logits
and costs a few percent of the step in its chunked products. Where the logits fit, PyTorch's
head is faster: the projection and the loss, holding the logits and their log-probabilities
for the backward. The last stage therefore has both forms: its graph runs the fused head, and
:func:`unfused` gives the same graph with the call replaced by
:func:`plain_linear_cross_entropy`, the same function of the same inputs computed as PyTorch
computes it (the same node positions, the same readers). The profile measures the unfused
form as an option of the stage (a *form option*: docs/formats.md, ``options``), the planner
(``rotor-ops``) picks it at budgets where its logits fit and it is faster, and the executor
runs the stage's unfused form there (docs/executors.md, "The head, fused or not").

A model captured with ``keep_logits=True`` returns its logits: its head is never fused, so its
last stage has PyTorch's head and no other form.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import fx

from chainplan.runtime.linearloss import linear_cross_entropy

__all__ = ["DEVICES", "UNFUSED_HEAD", "has_fused_head", "plain_linear_cross_entropy",
           "unfused"]

#: The name of the unfused head's form, in a stage's options and a plan's choices.
UNFUSED_HEAD = "unfused_head"

#: The device types whose profiles measure the unfused head as an option. Not the CPU: its
#: allocator hands the logits' large blocks back to the system, and the unfused head then
#: costs the whole step more than its own time. On bench/promise's GPT (one thread, a
#: 8192-word head), the head measured 102.8 ms unfused against 106.2 ms fused, timed in
#: alternation, while the store-all step ran 0.987x the plain step with it and 0.798x with
#: the fused head (bench/promise/headform.py): the stage's time does not see the cost.
DEVICES = frozenset({"cuda"})


def plain_linear_cross_entropy(h: torch.Tensor, weight: torch.Tensor,
                               bias: torch.Tensor | None, target: torch.Tensor, *,
                               reduction: str = "mean", ignore_index: int = -100,
                               rows: int = 0, scale: float | None = None,
                               softcap: float | None = None) -> torch.Tensor:
    """What :func:`~chainplan.runtime.linearloss.linear_cross_entropy` computes, as
    PyTorch's ``Linear`` and ``cross_entropy`` compute it: the whole logits at once, in
    float32 at least (as transformers' losses upcast them), scaled and soft-capped when
    asked; the loss in the dtype the fused call returns. ``rows`` (the fused call's chunk)
    is ignored."""
    del rows
    logits = F.linear(h, weight, bias)
    logits = logits.float() if logits.element_size() < 4 else logits
    if scale is not None:
        logits = logits * scale
    if softcap is not None:
        logits = softcap * torch.tanh(logits / softcap)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1),
                           reduction=reduction, ignore_index=ignore_index)
    if torch.is_autocast_enabled(h.device.type):
        return loss.float()
    return loss.to(torch.promote_types(h.dtype, weight.dtype))


def has_fused_head(gm: fx.GraphModule) -> bool:
    """Whether the graph runs a head fused with its loss."""
    return any(n.op == "call_function" and n.target is linear_cross_entropy
               for n in gm.graph.nodes)


def unfused(gm: fx.GraphModule) -> fx.GraphModule:
    """A copy of ``gm`` whose fused heads run as PyTorch's (module docstring): the same
    nodes in the same order, the fused call's target replaced.

    Raises:
        ValueError: ``gm`` has no fused head.
    """
    if not has_fused_head(gm):
        raise ValueError("the graph has no head fused with its loss")
    graph = fx.Graph()
    graph.output(graph.graph_copy(gm.graph, {}))
    for n in graph.nodes:
        if n.op == "call_function" and n.target is linear_cross_entropy:
            n.target = plain_linear_cross_entropy
    return fx.GraphModule(gm, graph)
