"""Capturing a model's forward as a graph with ``torch.export`` (training IR).

:func:`capture` calls ``torch.export.export(model, args, kwargs, strict=False)``: a
non-strict export runs the model's Python code on fake tensors and records the ATen
operations it performs, before any decomposition or functionalization (the training IR),
so the operations are the ones eager PyTorch runs, autograd behaves the same, in-place
updates stay in place (BatchNorm statistics) and every node knows the modules it was called
from (``nn_module_stack``). Parameters, buffers and constants become placeholders naming
their owner, so the extracted stages can run with the model's own tensors.

**Eager paths.** While it traces, export sets ``torch.compiler.is_compiling()`` and
``is_exporting()``, and libraries branch on them: transformers then builds an explicit
causal mask and repeats the key/value heads where its eager forward passes
``is_causal=True`` and ``enable_gqa=True`` to SDPA, a different kernel whose gradients
differ in the last bits (BERT under bf16 autocast: 1e-4 after one step). The chain must
compute what the module computes, so the model's own ``forward`` is traced with both
flags off, taking the branches eager PyTorch takes, and where transformers reads the values
of a tensor the trace computes from constants (its position ids), they are computed
(:mod:`chainplan.graph.eager`). Where an eager branch reads a tensor's values (which a graph
cannot), the capture is repeated with the flags as export sets them, and
:attr:`Capture.eager_paths` says so.

**Outputs.** ``forward`` may return any pytree of tensors and constants (a tuple, a dict, a
HuggingFace ``ModelOutput``): :attr:`Capture.returns` holds its leaves and
:attr:`Capture.out_spec` its structure, so the executors give back the same object.

torch.fx's symbolic tracing is not used as a fallback: what a non-strict export rejects
(control flow on tensor values, ``.item()`` in a branch) fails symbolic tracing too, and
export records shapes and module calls that symbolic tracing does not. What cannot be
captured is refused with a :class:`CaptureError` naming the construct and the fallback
that remains: declaring the stages by hand as an ``nn.Sequential``.
"""

from __future__ import annotations

import contextlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx, nn
from torch.export import ExportedProgram
from torch.export.graph_signature import InputKind, OutputKind
from torch.fx import config as fx_config
from torch.utils import _pytree as pytree

from chainplan.errors import ProfileError
from chainplan.graph.aliasing import alias_root, writes
from chainplan.graph.call import decoder_input, encoder_decoder
from chainplan.graph.eager import eager_branches
from chainplan.graph.fuseloss import UnfusedHead, fuse_head
from chainplan.graph.held import drop_metadata_assertions

__all__ = ["Capture", "CaptureError", "Input", "capture", "FALLBACK"]

#: The advice every refusal ends with.
FALLBACK = ("declare the stages by hand instead: an nn.Sequential of blocks that each take one "
            "tensor and return one tensor, in order (branches and side inputs inside a block), "
            "e.g. nn.Sequential(stem, *blocks, head)")


class CaptureError(ProfileError):
    """A model cannot be turned into a chain from its graph; the message names the
    construct (data-dependent control flow, an in-place update of an input, several
    outputs, ...) and the fallback."""


@dataclass(frozen=True)
class Input:
    """What a placeholder of the captured graph stands for.

    Attributes:
        kind: ``"user"`` (an argument of ``forward``), ``"parameter"``, ``"buffer"`` or
            ``"constant"`` (a tensor made inside ``forward``, lifted by export).
        name: the argument's name (``"mask"``, ``"args[1]"``) or the tensor's fully
            qualified name in the model (``"blocks.0.ln.weight"``).
        flat_index: for a user input, its position among the flattened ``(args, kwargs)``.
        value: a constant's tensor, or a non-tensor argument's value.
    """

    kind: str
    name: str
    flat_index: int = -1
    value: Any = None


@dataclass(frozen=True)
class Capture:
    """A captured forward: its graph, what each placeholder is, and which input is a_0.

    Attributes:
        program: the exported program (its graph module holds any sub-graphs).
        graph: the graph, nodes in execution order.
        inputs: every placeholder and what it stands for.
        main: the placeholder of the chain input a_0 (the first tensor argument).
        returns: the leaves of what ``forward`` returns: graph nodes, or constants.
        out_spec: the pytree structure of what ``forward`` returns.
        spec: the pytree structure of ``(args, kwargs)`` at capture.
        containers: the module paths of the model's ``nn.Sequential`` containers.
        eager_paths: whether the model's Python code took its eager branches (module
            docstring); False when one of them reads tensor values.
        dropped: the positions among :attr:`returns` of the logits taken out of what
            ``forward`` returns so that a language model's head fuses with its loss
            (:func:`~chainplan.graph.fuseloss.drop_returned_logits`; None there).
    """

    program: ExportedProgram
    graph: fx.Graph
    inputs: dict[fx.Node, Input]
    main: fx.Node
    returns: tuple[Any, ...]
    out_spec: pytree.TreeSpec
    spec: pytree.TreeSpec
    containers: frozenset[str]
    eager_paths: bool = True
    dropped: tuple[int, ...] = ()

    def return_names(self) -> list[str]:
        """The returned leaves as a user reads them: ``logits``, ``loss``, ``[0]``."""
        shaped = pytree.tree_unflatten(list(range(len(self.returns))), self.out_spec)
        try:
            paths = [path for path, _ in pytree.tree_flatten_with_path(shaped)[0]]
        except (ValueError, TypeError, NotImplementedError):  # a node type without key paths
            return [f"[{i}]" for i in range(len(self.returns))]
        return [_path_name(p) for p in paths]


def _path_name(path: tuple[Any, ...]) -> str:
    """A returned leaf's key path as a user writes it: ``logits``,
    ``text_model_output.last_hidden_state``, ``[0]``, ``hidden_states[2]``."""
    text = ""
    for key in path:
        if isinstance(key, pytree.SequenceKey):
            text += f"[{key.idx}]"
        else:  # a mapping key or an attribute: dotted, as the output object reads
            name = key.key if isinstance(key, pytree.MappingKey) else getattr(key, "name", key)
            text += f".{name}" if text else str(name)
    return text or "output"


def _leaf_name(path: tuple[Any, ...], positional: list[str]) -> str:
    """The argument a key path into ``(args, kwargs)`` points at: ``mask``, ``x``
    (positional arguments by their names in ``forward``), ``args[3]``, ``pair[1]``."""
    where, *rest = path
    text = ""
    if where.idx == 0 and rest and isinstance(rest[0], pytree.SequenceKey):
        i = rest.pop(0).idx
        text = positional[i] if i < len(positional) else f"args[{i}]"
    for key in rest:
        if isinstance(key, pytree.MappingKey):
            text += f"[{key.key!r}]" if text else str(key.key)
        elif isinstance(key, pytree.SequenceKey):
            text += f"[{key.idx}]"
        else:
            text += str(key)
    return text


def _positional(model: nn.Module) -> list[str]:
    """The names of ``model.forward``'s positional parameters."""
    try:
        params = inspect.signature(model.forward).parameters.values()
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return [p.name for p in params if p.kind in kinds]


def capture(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], *,
            traces: bool = False, eager: bool = True, keep_logits: bool = False) -> Capture:
    """Export ``model``'s forward on ``(args, kwargs)`` and describe its placeholders.

    The chain input a_0 is the first tensor among the positional arguments (or, without
    one, among the keyword arguments), an encoder-decoder's decoder input
    (:func:`~chainplan.graph.call.decoder_input`); every other tensor argument is a side
    input.

    Keyword Args:
        traces: record each node's source line (default: False). Recording them makes a
            capture almost twice as slow, so a capture without them is repeated with them
            only to name the line of a construct that is refused.
        eager: trace the model's own code on its eager branches (default: True; module
            docstring); a capture that fails so is repeated with export's settings.
        keep_logits: return a language model's logits beside its loss, which keeps
            PyTorch's head (default: False: the logits are not returned and the head is
            fused with its loss, :mod:`chainplan.graph.fuseloss`).

    Raises:
        CaptureError: there is no tensor argument, torch.export cannot capture the forward
            (the message names the construct and the source line), the forward updates
            an input in place, or a language model's loss cannot be computed without its
            logits (the message names the option; ``keep_logits=True`` keeps them).
    """
    leaves, spec = pytree.tree_flatten_with_path((tuple(args), dict(kwargs)))
    tensors = [i for i, (_, v) in enumerate(leaves) if isinstance(v, torch.Tensor)]
    decoder = decoder_input(model, kwargs)
    if decoder is None and encoder_decoder(model):
        raise CaptureError(
            f"{type(model).__name__} is an encoder-decoder called without a decoder input "
            "that chainplan can take as the chain input: its chain is the decoder, whose "
            "input it makes from labels= only where the model says how it shifts them "
            "(prepare_decoder_input_ids_from_labels, or its module's shift_tokens_right "
            "with the config's pad and decoder start ids), and this one does not: pass "
            "decoder_input_ids= (the labels shifted right, as its forward shifts them) "
            "beside labels=")
    if decoder is not None:  # an encoder-decoder's chain is its decoder (graph/call.py)
        tensors.sort(key=lambda i: leaves[i][0] != (pytree.SequenceKey(1),
                                                      pytree.MappingKey(decoder)))
    if not tensors:
        raise CaptureError(f"{type(model).__name__} was called without a tensor argument: "
                           "the chain input is the first tensor argument of forward")
    # The same tensor passed twice (labels=input_ids) would become one placeholder; each
    # argument gets its own, as the executors pass them.
    seen: set[int] = set()
    distinct = []
    for _, v in leaves:
        if isinstance(v, torch.Tensor) and id(v) in seen:
            v = v.clone()
        seen.add(id(v))
        distinct.append(v)
    call_args, call_kwargs = pytree.tree_unflatten(distinct, spec)
    try:
        with _source_lines(traces), eager_branches(model, eager):
            program = torch.export.export(model, tuple(call_args), dict(call_kwargs),
                                          strict=False)
    except Exception as err:  # export raises many unrelated types; each is explained
        if eager:  # an eager branch may read values: export's own branches may not
            return capture(model, args, kwargs, traces=traces, eager=False,
                           keep_logits=keep_logits)
        raise CaptureError(_explain(model, err)) from err
    graph = program.graph
    drop_metadata_assertions(graph)  # held.py: what the plain step does not hold
    try:  # the head and its loss, never holding the logits
        dropped = fuse_head(graph, type(model).__name__, keep_logits=keep_logits)
    except UnfusedHead as err:
        raise CaptureError(str(err)) from None
    by_name = {n.name: n for n in graph.nodes if n.op == "placeholder"}
    inputs: dict[fx.Node, Input] = {}
    positional = _positional(model)
    user_index = 0
    for s in program.graph_signature.input_specs:
        node = by_name[s.arg.name] if hasattr(s.arg, "name") else None
        if node is None:
            continue
        if s.kind == InputKind.USER_INPUT:
            path, value = leaves[user_index]
            inputs[node] = Input("user", _leaf_name(path, positional), user_index,
                                 None if isinstance(value, torch.Tensor) else value)
            user_index += 1
        elif s.kind == InputKind.PARAMETER:
            inputs[node] = Input("parameter", str(s.target))
        elif s.kind == InputKind.BUFFER:
            inputs[node] = Input("buffer", str(s.target))
        elif s.kind == InputKind.CONSTANT_TENSOR:
            inputs[node] = Input("constant", str(s.target), value=program.constants[str(s.target)])
        else:
            raise CaptureError(f"{type(model).__name__}: torch.export made an input of kind "
                               f"{s.kind.name} ({s.arg}), which chainplan cannot bind; "
                               f"{FALLBACK}")
    main = next(n for n, i in inputs.items() if i.kind == "user" and i.flat_index == tensors[0])
    returns = _returns(model, program, graph)
    update = _input_update(graph, inputs)
    if update is not None:
        if not traces:  # capture again to name the line
            return capture(model, args, kwargs, traces=True, eager=eager,
                           keep_logits=keep_logits)
        node, name = update
        raise CaptureError(
            f"{type(model).__name__}.forward updates its input {name!r} in place "
            f"({_op_name(node)}{_where(node)}); a chain must leave its inputs intact, "
            f"since recomputations read them again: use an out-of-place operation, or "
            f"{FALLBACK}")
    containers = frozenset(name for name, m in model.named_modules()
                           if name and isinstance(m, nn.Sequential))
    return Capture(program, graph, inputs, main, returns, program.call_spec.out_spec, spec,
                   containers, eager, tuple(dropped))


def _returns(model: nn.Module, program: ExportedProgram, graph: fx.Graph) -> tuple[Any, ...]:
    """The leaves ``forward`` returns, in the order of its output structure."""
    specs = program.graph_signature.output_specs
    if any(s.kind != OutputKind.USER_OUTPUT for s in specs):
        kinds = sorted({s.kind.name for s in specs if s.kind != OutputKind.USER_OUTPUT})
        raise CaptureError(f"{type(model).__name__}.forward updates buffers or inputs in a way "
                           f"torch.export reports as outputs ({', '.join(kinds)}), which "
                           f"chainplan cannot bind; {FALLBACK}")
    out = graph.output_node().args[0]
    leaves = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    for leaf in leaves:
        if isinstance(leaf, fx.Node) and not isinstance(leaf.meta.get("val"), torch.Tensor):
            raise CaptureError(f"{type(model).__name__}.forward returns {leaf.meta.get('val')!r}"
                               ", a value computed in the graph that is not a tensor")
    return leaves


def _input_update(graph: fx.Graph,
                  inputs: dict[fx.Node, Input]) -> tuple[fx.Node, str] | None:
    """The first operation updating an argument in place, and the argument's name: it
    cannot be replayed, since a recomputed stage would read the updated value."""
    for node in graph.nodes:
        for w in writes(node):
            spec = inputs.get(alias_root(w))
            if spec is not None and spec.kind == "user":
                return node, spec.name
    return None


@contextlib.contextmanager
def _source_lines(on: bool) -> Iterator[None]:
    """Record (or not) each node's stack trace while tracing (torch.fx's global switch).
    A torch without the switch (2.11 has none) always records them, which is only slower."""
    if not hasattr(fx_config, "do_not_emit_stack_traces"):
        yield
        return
    before = fx_config.do_not_emit_stack_traces
    fx_config.do_not_emit_stack_traces = not on
    try:
        yield
    finally:
        fx_config.do_not_emit_stack_traces = before


def _op_name(node: fx.Node) -> str:
    return str(getattr(node.target, "__name__", node.target))


def _where(node: fx.Node) -> str:
    """`` at file.py:12 (code)`` from a node's recorded stack trace, or nothing."""
    trace = node.meta.get("stack_trace") or ""
    found = re.findall(r'File "([^"]+)", line (\d+), in \w+\n\s*(.+)', trace)
    if not found:
        return ""
    path, line, code = found[-1]
    return f" at {path.rsplit('/', 1)[-1]}:{line}: {code.strip()}"


def _explain(model: nn.Module, err: Exception) -> str:
    """A refusal for an export failure: the construct, the user's line, the fallback."""
    text = str(err)
    located = re.search(r'raised this error:\s*\n\s*File "([^"]+)", line (\d+), in (\w+)\n\s*(.+)',
                        text)
    where = ""
    if located:
        path, line, func, code = located.groups()
        where = f" at {path.rsplit('/', 1)[-1]}:{line} in {func}: {code.strip()}"
    name = type(err).__name__
    unknown = re.search(r"Found <class '([\w.]+)'> in (output|input)", text)
    if name == "GuardOnDataDependentSymNode" or "data-dependent" in text:
        what = ("data-dependent control flow (a Python branch, loop or size computed from a "
                "tensor's values, which a graph cannot hold)")
    elif unknown:
        kind, where = unknown.group(1), unknown.group(2)
        short = kind.rsplit(".", 1)[-1]
        fix = ("call it with use_cache=False (a generation cache is of no use in training)"
               if "cache" in kind.lower() else
               f"return only tensors, tuples, lists, dicts or dataclasses registered with "
               f"torch.utils._pytree (register {short} with register_pytree_node)")
        what = (f"forward {'returns' if where == 'output' else 'takes'} a {short} "
                f"({kind}), which a graph cannot hold: {fix}")
        return f"torch.export cannot capture {type(model).__name__}.forward: {what}"
    else:
        what = f"{name}: {text.strip().splitlines()[0] if text.strip() else 'no message'}"
    return (f"torch.export cannot capture {type(model).__name__}.forward as a graph: {what}"
            f"{where}; {FALLBACK}")
