"""Recognizing a model of towers joined at the loss, from one call of its forward.

A CLIP-style dual encoder runs an image tower on the images and a text tower on the tokens
and joins them only in a contrastive loss; a triplet network runs one tower on three inputs
(docs/multichain.md). :func:`find_towers` calls the model once (without gradients) and
watches its submodules: a *tower* is the outermost module call whose chain input (its first
tensor argument, positional arguments first, then keywords in the order of its signature:
``self.text_model(input_ids=ids, attention_mask=mask)`` reads ``ids``) is one of the
model's tensor inputs, as it was passed in, positionally or by keyword
(``model(input_ids=..., pixel_values=...)``). Its other arguments may be model inputs too
(a text tower's attention mask) or constants. Everything the forward does outside the
tower calls is the *join*: the joint loss of the multi-chain model.

A tower returns one tensor or a structure of them (a tuple, a dict, a HuggingFace
``ModelOutput`` with ``last_hidden_state`` and ``pooler_output``). The chain of such a tower
ends at the tensor every returned value is computed from (:mod:`chainplan.graph.analysis`);
its light head (a pooling, a LayerNorm) runs with the join and rebuilds the returned object
with every field, so the caller gets what the plain model returns
(:mod:`chainplan.towers.parts`).

The model is towers joined at the loss when at least two inputs go into towers, every tower
call returns tensors and takes nothing computed inside the forward, and the join is
light: the modules it calls hold at most :data:`JOIN_PARAM_SHARE` of the towers' parameters
(a learnable temperature, not a transformer stack). Any other model is not (None), and the
single-chain capture takes it: a diffusion network called as ``net(x, t)`` sends ``t`` into a
time embedding, but what follows is the whole network. When towers are required (a
multichain plan is to run on the model), the rule that fails is raised as a
:class:`TowersError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from chainplan.errors import ProfileError
from chainplan.graph.call import forward_parameters
from chainplan.profiler.measuring import preserved

__all__ = ["JOIN_PARAM_SHARE", "BranchCall", "TowerSplit", "TowersError", "find_towers",
           "input_name", "model_inputs", "tower_input"]

#: The largest share of the towers' parameters the join's modules may hold.
JOIN_PARAM_SHARE = 0.05


class TowersError(ProfileError):
    """A model that looks like towers joined at the loss breaks one of the rules
    :func:`find_towers` needs to run it (the message names the rule and the module)."""


def model_inputs(args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The model's inputs as :class:`BranchCall` indexes them: the positional arguments,
    then the keyword arguments' values in the order they were given."""
    return (*args, *kwargs.values())


def input_name(i: int, args: Sequence[Any], kwargs: dict[str, Any]) -> str:
    """Model input ``i`` as the caller wrote it: ``input 2`` or ``pixel_values=``."""
    if i < len(args):
        return f"input {i + 1}"
    return f"{list(kwargs)[i - len(args)]}="


@dataclass(frozen=True)
class BranchCall:
    """One tower call of the model's forward: branch ``j`` of the multi-chain model.

    Attributes:
        tower: index of the tower (the module) in :attr:`TowerSplit.towers`.
        input: index of the model input (:func:`model_inputs`) that is the tower's input
            a_0^(j).
        args: the call's positional arguments: ``("input", i)`` for model input ``i``,
            ``("const", value)`` for anything else.
        kwargs: its keyword arguments, likewise.
        at: where the call passes its input: a position in ``args`` or a keyword.
    """

    tower: int
    input: int
    args: tuple[tuple[str, Any], ...] = ()
    kwargs: tuple[tuple[str, tuple[str, Any]], ...] = ()
    at: int | str = 0

    def bind(self, inputs: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's arguments, its input included, for the model inputs ``inputs``."""
        def value(spec: tuple[str, Any]) -> Any:
            return inputs[spec[1]] if spec[0] == "input" else spec[1]
        return tuple(value(a) for a in self.args), {k: value(v) for k, v in self.kwargs}

    def others(self, inputs: Sequence[Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """The call's arguments but its input (which :attr:`at` says where it goes)."""
        args, kwargs = self.bind(inputs)
        if isinstance(self.at, str):
            kwargs.pop(self.at)
            return args, kwargs
        return args[:self.at] + args[self.at + 1:], kwargs


@dataclass(frozen=True)
class TowerSplit:
    """The towers of a model and the branches that run them, in call order.

    Attributes:
        towers: the distinct tower modules; a tower several inputs go through (a Siamese
            network) appears once.
        names: each tower's path in the model (``"image_encoder"``).
        branches: one per tower call, in the order the forward makes them.
        structured: per tower, whether it returns a structure (a tuple, a dict, a
            ``ModelOutput``) rather than one tensor.
    """

    towers: tuple[nn.Module, ...]
    names: tuple[str, ...]
    branches: tuple[BranchCall, ...]
    structured: tuple[bool, ...] = ()

    def calls_of(self, tower: int) -> list[int]:
        """The branches (indices) that call tower ``tower``, in call order."""
        return [j for j, b in enumerate(self.branches) if b.tower == tower]


@dataclass
class _Call:
    module: nn.Module
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    parent: int  # index of the enclosing call, -1 for a call of the forward itself
    output: Any = None


@contextlib.contextmanager
def _watching(model: nn.Module) -> Iterator[list[_Call]]:
    """Record every submodule call of ``model`` (not the model itself), in the order they
    start, each with its enclosing call."""
    calls: list[_Call] = []
    stack: list[int] = []

    def pre(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        calls.append(_Call(module, args, dict(kwargs), stack[-1] if stack else -1))
        stack.append(len(calls) - 1)

    def post(module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], out: Any) -> None:
        calls[stack.pop()].output = out

    handles = []
    for m in model.modules():
        if m is model:
            continue
        handles.append(m.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(m.register_forward_hook(post, with_kwargs=True))
    try:
        yield calls
    finally:
        for h in handles:
            h.remove()


def _spec(value: Any, inputs: Sequence[Any]) -> tuple[str, Any] | None:
    """What an argument of a tower call is: a model input, a constant, or None for a tensor
    computed inside the forward (which a tower may not take)."""
    for i, x in enumerate(inputs):
        if value is x:
            return ("input", i)
    if isinstance(value, torch.Tensor):
        return None
    return ("const", value)


def find_towers(model: nn.Module, inputs: Sequence[Any], kwargs: dict[str, Any] | None = None,
                *, required: bool = False) -> TowerSplit | None:
    """The towers of ``model`` called as ``model(*inputs, **kwargs)``, or None when it is not
    a model of towers joined at the loss (module docstring). Branch inputs index
    :func:`model_inputs` of the call.

    The model runs once under ``torch.no_grad()``, in its current mode; its buffers and the
    random number streams are restored after.

    Keyword Args:
        required: raise instead of returning None.

    Raises:
        TowersError: with ``required``, the rule the model breaks.
    """
    try:
        return _find(model, inputs, kwargs or {})
    except TowersError:
        if required:
            raise
        return None


def _find(model: nn.Module, args: Sequence[Any], kwargs: dict[str, Any]) -> TowerSplit:
    inputs = model_inputs(args, kwargs)
    tensors = [x for x in inputs if isinstance(x, torch.Tensor)]
    if len(tensors) < 2:
        raise TowersError(f"{type(model).__name__} takes {len(tensors)} tensor input(s): towers "
                          "joined at the loss take one input each, two at least")
    # Invisible to the model: buffers (BatchNorm's statistics) and random streams restored.
    with preserved(model, tensors[0].device), torch.no_grad(), _watching(model) as calls:
        model(*args, **kwargs)
    paths = {id(m): name for name, m in model.named_modules() if name}
    towers: list[nn.Module] = []
    branches: list[BranchCall] = []
    structured: list[bool] = []
    tower_calls: list[tuple[_Call, int]] = []  # with the model input it takes
    in_tower = [False] * len(calls)  # the call runs inside a tower call
    is_tower = [False] * len(calls)
    for i, c in enumerate(calls):
        if c.parent >= 0 and (in_tower[c.parent] or is_tower[c.parent]):
            in_tower[i] = True
            continue  # part of the tower
        spec = _spec(tower_input(c.module, c.args, c.kwargs), inputs)
        if spec is None or spec[0] != "input":
            continue
        is_tower[i] = True
        tower_calls.append((c, spec[1]))
    if len({k for _, k in tower_calls}) < 2:
        raise TowersError(f"fewer than two inputs of {type(model).__name__} go straight into a "
                          "submodule (a tower takes one model input as its first tensor "
                          "argument)")
    for c, k in tower_calls:
        name = paths.get(id(c.module), type(c.module).__name__)
        _check_output(name, c.output)
        specs = [_argument(name, f"argument {p + 1}", a, inputs) for p, a in enumerate(c.args)]
        kw = [(key, _argument(name, f"{key}=", v, inputs)) for key, v in c.kwargs.items()]
        if not any(t is c.module for t in towers):
            towers.append(c.module)
            structured.append(not isinstance(c.output, torch.Tensor))
        t = next(i for i, m in enumerate(towers) if m is c.module)
        branches.append(BranchCall(t, k, tuple(specs), tuple(kw), _position(c, inputs[k])))
    _check_join(towers, [c for i, c in enumerate(calls) if not in_tower[i] and not is_tower[i]],
                paths)
    names = tuple(paths.get(id(m), type(m).__name__) for m in towers)
    return TowerSplit(tuple(towers), names, tuple(branches), tuple(structured))


def tower_input(module: nn.Module, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """The chain input of a call of ``module``: its first tensor argument, positional
    arguments first, then keywords in the order of its signature (as the graph capture
    takes a_0, :func:`chainplan.graph.call.chain_input`); None when there is none."""
    order = {name: i for i, name in enumerate(forward_parameters(module))}
    ordered = sorted(kwargs.items(), key=lambda kv: order.get(kv[0], len(order)))
    for v in pytree.tree_leaves((tuple(args), [v for _, v in ordered])):
        if isinstance(v, torch.Tensor):
            return v
    return None


def _argument(tower: str, where: str, value: Any, inputs: Sequence[Any]) -> tuple[str, Any]:
    """The spec of one argument of a tower call; a tensor computed inside the forward is
    refused."""
    spec = _spec(value, inputs)
    if spec is None:
        raise TowersError(f"tower {tower} takes a tensor computed inside the forward as its "
                          f"{where}; a tower may take model inputs and constants only "
                          "(compute it inside the tower)")
    return spec


def _position(call: _Call, x: torch.Tensor) -> int | str:
    """Where ``call`` passes its chain input ``x``: a position or a keyword."""
    for p, a in enumerate(call.args):
        if a is x:
            return p
    return next(k for k, v in call.kwargs.items() if v is x)


def _check_output(tower: str, out: Any) -> None:
    """A tower returns one tensor or a structure of tensors (and constants)."""
    if isinstance(out, torch.Tensor):
        return
    leaves = pytree.tree_leaves(out)
    if not any(isinstance(v, torch.Tensor) for v in leaves) or isinstance(out, nn.Module):
        raise TowersError(f"tower {tower} returns {type(out).__name__} with no tensor; a "
                          "tower of a model joined at the loss returns a tensor, or a "
                          "structure (tuple, dict, ModelOutput) of tensors computed from its "
                          "input")


def _check_join(towers: list[nn.Module], join_calls: list[_Call], paths: dict[int, str]) -> None:
    """Refuse a join that holds a real part of the model (see the module docstring)."""
    tower_params = {id(p) for t in towers for p in t.parameters()}
    tower_count = sum(p.numel() for t in towers for p in t.parameters())
    join: dict[int, nn.Parameter] = {}
    heavy = ""
    for c in join_calls:
        own = [p for p in c.module.parameters() if id(p) not in tower_params]
        for p in own:
            join[id(p)] = p
        if own and not heavy:
            heavy = paths.get(id(c.module), type(c.module).__name__)
    join_count = sum(p.numel() for p in join.values())
    if join_count > JOIN_PARAM_SHARE * max(tower_count, 1):
        raise TowersError(f"the model's inputs go into towers, but the code after them calls "
                          f"modules with {join_count} parameters (e.g. {heavy}) against "
                          f"{tower_count} in the towers: a model of towers joined at the loss "
                          f"joins them in a light loss (at most {JOIN_PARAM_SHARE:.0%} of the "
                          "towers' parameters)")
