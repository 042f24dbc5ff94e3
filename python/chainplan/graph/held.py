"""What a captured step would hold that the model's own step does not, removed at capture.

``torch.export`` records an ``_assert_tensor_metadata`` check for every ``.to()`` the model
makes. It computes nothing, but it reads its tensor: a value computed once per step that
only a later stage's assertion reads (a padding mask's intermediate, the labels shifted by
the loss) became a side value, held through the whole step and counted in every
operation's overheads (a Llama given an attention mask held a batch x T x T boolean
tensor so). :func:`drop_metadata_assertions` removes them: the graph is specialized to its
inputs' dtypes and devices already, and the executors check a call's kind before running
it.

(The larger difference between a plan that recomputes nothing and the plain
HuggingFace model, issue 35's 2-4 %, was an attention mask converted and saved in every
layer where the eager step passes none; :mod:`chainplan.graph.eager` takes the eager branch
that passes none.)
"""

from __future__ import annotations

import torch
from torch import fx

__all__ = ["drop_metadata_assertions"]

_ASSERT_METADATA = torch.ops.aten._assert_tensor_metadata.default


def drop_metadata_assertions(graph: fx.Graph) -> int:
    """Remove every ``_assert_tensor_metadata`` node (module docstring); how many."""
    gone = [n for n in graph.nodes if n.op == "call_function" and n.target is _ASSERT_METADATA
            and not n.users]
    for n in gone:
        graph.erase_node(n)
    return len(gone)
