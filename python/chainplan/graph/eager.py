"""The model's own code on the branches eager PyTorch takes, while ``torch.export`` traces it.

Libraries branch on whether they are traced, and each such branch computes something else
than the plain model does, so the chain would not compute what the module computes:

* **The compiler's flags.** While it traces, export sets ``torch.compiler.is_compiling()``
  and ``is_exporting()``, and transformers then builds an explicit causal mask where its
  eager forward passes ``is_causal=True`` to SDPA (BERT under bf16 autocast: 1e-4 after one
  step). :func:`eager_branches` traces the model's own ``forward`` with both flags off.
* **Values read on a fake tensor.** transformers' causal language models look for packed
  sequences in their position ids (:func:`transformers.masking_utils.
  find_packed_sequence_indices`) before they let SDPA use ``is_causal`` and, with
  grouped-query attention, ``enable_gqa``; a traced tensor has no values, so under export
  the check is skipped and the model takes the packed path: an explicit mask and the
  key/value heads repeated (``repeat_kv``). The gradients of the repeated heads are then
  summed by the expand's backward, where eager SDPA sums them inside its kernel, in another
  order: Mistral with 8 query and 2 key/value heads differed by 1e-8 in fp32 (issue 35).
  When the position ids are a constant of the trace (computed from no input, parameter or
  buffer: ``arange`` when the call passes none), :func:`constant_value` computes them and the
  check runs on their values, as in eager; position ids passed by the caller stay a traced
  input, and the graph keeps the general path (packed or not, decided by the values at
  each call).

Where a branch reads values a graph cannot have (an input's), the capture is repeated with
export's own flags (:func:`chainplan.graph.capture.capture`).
"""

from __future__ import annotations

import contextlib
import functools
import sys
from collections.abc import Callable, Iterator
from typing import Any

import torch
from torch import fx, nn
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.fx.experimental import proxy_tensor

__all__ = ["constant_value", "eager_branches"]


@contextlib.contextmanager
def eager_branches(model: nn.Module, on: bool) -> Iterator[None]:
    """While export traces ``model``, its own forward sees ``torch.compiler.is_compiling()``
    and ``is_exporting()`` as eager code does (False), and transformers' packed-sequence
    check reads the position ids where they are a constant (module docstring); torch's
    code around it does not."""
    if not on:
        yield
        return
    inner = model.forward

    @functools.wraps(inner)
    def forward(*args: Any, **kwargs: Any) -> Any:
        compiling, exporting = torch.compiler._is_compiling_flag, torch.compiler._is_exporting_flag
        torch.compiler._is_compiling_flag = torch.compiler._is_exporting_flag = False
        try:
            with _packed_check_on_constants():
                return inner(*args, **kwargs)
        finally:
            torch.compiler._is_compiling_flag = compiling
            torch.compiler._is_exporting_flag = exporting

    had = "forward" in model.__dict__
    before = model.__dict__.get("forward")
    model.__dict__["forward"] = forward
    try:
        yield
    finally:
        if had:
            model.__dict__["forward"] = before
        else:
            del model.__dict__["forward"]


@contextlib.contextmanager
def _packed_check_on_constants() -> Iterator[None]:
    """transformers' ``find_packed_sequence_indices`` answering as in eager where its
    position ids are a constant of the trace (module docstring). Only when transformers'
    masking module is loaded already (a model of it is being traced)."""
    masking: Any = sys.modules.get("transformers.masking_utils")
    original: Callable[[torch.Tensor], torch.Tensor | None] | None = getattr(
        masking, "find_packed_sequence_indices", None)
    if original is None:
        yield
        return

    def find_packed_sequence_indices(position_ids: torch.Tensor) -> torch.Tensor | None:
        value = constant_value(position_ids)
        if value is not None:
            with _outside_trace():
                packed = original(value)
            if packed is None:
                return None  # one sequence per row, as eager finds: is_causal, enable_gqa
        return original(position_ids)

    masking.find_packed_sequence_indices = find_packed_sequence_indices
    try:
        yield
    finally:
        masking.find_packed_sequence_indices = original


def constant_value(t: torch.Tensor) -> torch.Tensor | None:
    """The value of ``t``, a tensor of the graph export is tracing, when that graph computes
    it from constants alone (no input, parameter, buffer or lifted constant reaches it, and
    no operation draws random numbers); None otherwise, or outside a trace. The operations
    are run again on real tensors, outside the trace: they add nothing to the graph."""
    try:  # the tracer non-strict torch.export runs (read on torch 2.15)
        mode = proxy_tensor.get_proxy_mode()
        slot = None if mode is None else proxy_tensor.get_proxy_slot(t, mode.tracer, None)
        end: fx.Node | None = None if slot is None else slot.proxy.node
    except (AttributeError, TypeError):  # another tracer: no value, the general path
        return None
    if end is None:
        return None
    order: list[fx.Node] = []
    seen: set[fx.Node] = set()
    stack: list[tuple[fx.Node, bool]] = [(end, False)]
    while stack:  # the ancestors of end, each after its inputs
        node, done = stack.pop()
        if done:
            order.append(node)
            continue
        if node in seen:
            continue
        seen.add(node)
        stack.append((node, True))
        stack.extend((a, False) for a in node.all_input_nodes)
    for node in order:
        target = node.target
        if node.op != "call_function" or not isinstance(target, torch._ops.OpOverload):
            return None
        if torch.Tag.nondeterministic_seeded in target.tags:
            return None
    env: dict[fx.Node, Any] = {}
    try:
        with _outside_trace():
            for node in order:
                args, kwargs = fx.node.map_arg((node.args, node.kwargs), env.__getitem__)
                env[node] = node.target(*args, **kwargs)  # type: ignore[operator]
    except Exception:  # an operation that does not run outside the trace: no value
        return None
    value = env[end]
    return value if isinstance(value, torch.Tensor) else None


@contextlib.contextmanager
def _outside_trace() -> Iterator[None]:
    """Real tensors, computed as eager code computes them: export's fake-tensor and
    tracing modes set aside."""
    with unset_fake_temporarily(), proxy_tensor.disable_proxy_modes_tracing():
        yield
