"""What a captured step would hold that the model's own step does not, removed at capture.

A plan that recomputes nothing should measure what the plain model measures. Three things
of the captured graph made it hold more (issue 35, item 6: 2.5 % over the plain step on a
HuggingFace Llama of 8 layers at sequence 256, growing with both):

* **metadata assertions.** ``torch.export`` records a ``_assert_tensor_metadata`` check for
  every ``.to()`` the model makes. It computes nothing, but it reads its tensor, and a
  value computed once per step (a mask built from the positions) that only a later stage's
  assertion reads becomes a side value held through the whole step.
  :func:`drop_metadata_assertions` removes them: the graph is specialized to its inputs'
  dtypes and devices already, and the executors check a call's kind before running it;
* **a causal mask built where the model's own step has none.** transformers gives
  ``scaled_dot_product_attention`` no mask and ``is_causal=True`` when it can prove the
  mask causal, and a boolean mask otherwise; the proof reads the positions' values (are
  the sequences packed?), which a graph cannot, so a captured model always builds the
  mask. Where the mask depends on no input (the positions made by the model itself from
  the sequence length), it is a constant of the graph: :func:`causal_masks` computes it
  at capture, and where it is the causal pattern the call becomes the model's own,
  ``is_causal=True`` and no mask: the same call, so the same kernel, as the plain step. A
  model that builds a constant causal mask and passes it itself gets the causal call too:
  on the CPU the two are bit for bit the same (SDPA's CPU kernel; tested), on CUDA another
  kernel may run (flash attention rather than the memory-efficient one), the same function
  within rounding;
* **a boolean attention mask converted in every layer.** Where a boolean mask computed in
  the graph remains (a padding mask made from the caller's ``attention_mask``, a sliding
  window), each call converts it into an
  additive mask of the query's dtype (``where(~mask, -inf, 0)``, ATen's
  ``convert_boolean_attn_mask``), a batch x 1 x T x T tensor that the call saves for its
  backward: one per layer, through the step. :func:`share_float_masks` converts the mask
  once where it is made (before its views: an ``expand`` stays a view) and hands every
  layer a view of that one tensor: the same values, bit for bit (the conversion is the one
  the call makes), held once. Done on the CPU, where it was verified bit for bit; on CUDA
  the call converts with another constant for cuDNN (-65504), and the backend is chosen
  per call, so the mask is left as it is there. Under autocast it is left too (autocast
  would cast a float mask in every call).
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import fx

from chainplan.graph.nodes import arguments, value_of

__all__ = ["causal_masks", "drop_metadata_assertions", "share_float_masks"]

_aten = torch.ops.aten
_ASSERT_METADATA = _aten._assert_tensor_metadata.default
_SDPA = _aten.scaled_dot_product_attention.default
_MASK_ARG = 3  # attn_mask's position in scaled_dot_product_attention's schema
# Operations a mask reaches the attention through that only view it.
_VIEWS = {_aten.expand.default, _aten.slice.Tensor, _aten.unsqueeze.default,
          _aten.view.default, _aten.alias.default, _aten.select.int}


def drop_metadata_assertions(graph: fx.Graph) -> int:
    """Remove every ``_assert_tensor_metadata`` node (module docstring); how many."""
    gone = [n for n in graph.nodes if n.op == "call_function" and n.target is _ASSERT_METADATA
            and not n.users]
    for n in gone:
        graph.erase_node(n)
    return len(gone)


def causal_masks(graph: fx.Graph) -> int:
    """Give every attention call whose boolean mask is a constant of the graph equal to the
    causal pattern ``is_causal=True`` and no mask instead (module docstring); how many."""
    constants: dict[fx.Node, Any] = {}
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not _SDPA:
            continue
        mask = _mask_of(node)
        kw = arguments(node)
        if (mask is None or kw["is_causal"] or kw["dropout_p"] or not _is_causal(
                _constant(mask, constants))):
            continue
        if len(node.args) > _MASK_ARG:
            node.update_arg(_MASK_ARG, None)
        else:
            node.update_kwarg("attn_mask", None)
        if len(node.args) > _MASK_ARG + 2:
            node.update_arg(_MASK_ARG + 2, True)
        else:
            node.update_kwarg("is_causal", True)
        count += 1
    if count:
        graph.eliminate_dead_code()
        graph.lint()
    return count


def _is_causal(mask: Any) -> bool:
    """Whether ``mask`` is a boolean ``(..., T, T)`` mask letting each query see the keys up
    to its own position, the same for every leading index."""
    if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool or mask.dim() < 2:
        return False
    q, k = mask.shape[-2:]
    if q != k or q < 2:  # transformers sets is_causal only for more than one query
        return False
    causal = torch.ones(q, k, dtype=torch.bool, device=mask.device).tril()
    return bool(torch.equal(mask, causal.expand(mask.shape)))


def _constant(node: fx.Node, memo: dict[fx.Node, Any]) -> Any:
    """``node``'s value when it depends on no placeholder (no input, parameter or buffer),
    computed now with real tensors; None otherwise."""
    if node in memo:
        return memo[node]
    value: Any = None
    # A random operation is no constant (and running it would draw from the generator).
    if (node.op == "call_function" and isinstance(node.target, torch._ops.OpOverload)
            and torch.Tag.nondeterministic_seeded not in node.target.tags):
        inputs = node.all_input_nodes
        known = [_constant(n, memo) for n in inputs]
        if all(v is not None for v in known):
            env = dict(zip(inputs, known, strict=True))
            args = fx.node.map_arg(node.args, env.__getitem__)
            kwargs = fx.node.map_arg(node.kwargs, env.__getitem__)
            try:
                value = node.target(*args, **kwargs)
            except Exception:  # an operation that cannot run here: not a known constant
                value = None
    memo[node] = value
    return value


def additive_mask(mask: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """The additive mask ``scaled_dot_product_attention`` makes of a boolean one:
    ``-inf`` where ``mask`` is False, 0 where it is True, in ``dtype``."""
    return torch.where(mask.logical_not(), -math.inf,
                       torch.scalar_tensor(0.0, dtype=dtype, device=mask.device))


def share_float_masks(graph: fx.Graph) -> int:
    """Convert each boolean attention mask once, where it is made, and give every attention
    call a view of the result (module docstring); how many calls now read a shared mask.
    Only on the CPU and outside autocast."""
    if torch.is_autocast_enabled("cpu"):
        return 0
    converted: dict[tuple[fx.Node, torch.dtype], fx.Node] = {}
    count = 0
    for node in list(graph.nodes):
        if node.op != "call_function" or node.target is not _SDPA:
            continue
        mask = _mask_of(node)
        query = value_of(node.args[0])
        if mask is None or query is None or query.device.type != "cpu":
            continue
        root, views = _root(mask)
        source = value_of(root)
        # A mask passed as an argument is left as it is: the caller holds it anyway.
        if (root.op == "placeholder" or source is None or source.dtype != torch.bool
                or source.device.type != "cpu"):
            continue
        key = (root, query.dtype)
        if key not in converted:
            dtype = query.dtype
            with graph.inserting_after(root):
                converted[key] = _node(graph, additive_mask, (root, dtype),
                                       _fake(source, lambda t, d=dtype: additive_mask(t, d)))
        value = converted[key]
        with graph.inserting_before(node):
            for v in views:  # the same views, of the float mask
                value = _node(graph, v.target, (value, *v.args[1:]),
                              _fake(value_of(value), lambda t, v=v: v.target(t, *v.args[1:])),
                              dict(v.kwargs))
        if len(node.args) > _MASK_ARG:
            node.update_arg(_MASK_ARG, value)
        else:
            node.update_kwarg("attn_mask", value)
        count += 1
    if count:
        graph.eliminate_dead_code()
        graph.lint()
    return count


def _mask_of(node: fx.Node) -> fx.Node | None:
    mask = node.args[_MASK_ARG] if len(node.args) > _MASK_ARG else node.kwargs.get("attn_mask")
    return mask if isinstance(mask, fx.Node) else None


def _root(mask: fx.Node) -> tuple[fx.Node, list[fx.Node]]:
    """The node a mask is a view of, and the views from it to the mask, in order."""
    views: list[fx.Node] = []
    node = mask
    while (node.op == "call_function" and node.target in _VIEWS and node.args
           and isinstance(node.args[0], fx.Node)):
        views.append(node)
        node = node.args[0]
    return node, views[::-1]


def _fake(val: Any, fn: Any) -> torch.Tensor:
    """``fn`` of a node's fake value, computed in its fake mode (the node's metadata)."""
    mode = getattr(val, "fake_mode", None)
    if mode is None:
        return fn(val)  # type: ignore[no-any-return]
    with mode:
        return fn(val)  # type: ignore[no-any-return]


def _node(graph: fx.Graph, target: Any, args: tuple[Any, ...], val: torch.Tensor,
          kwargs: dict[str, Any] | None = None) -> fx.Node:
    node = graph.call_function(target, args, kwargs or {})
    node.meta["val"] = val
    return node
