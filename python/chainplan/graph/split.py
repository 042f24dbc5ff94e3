"""Which chain a model is: the stages it declares, or those extracted from its graph.

An ``nn.Sequential`` called with one tensor is the chain of its stages, as declared
(:func:`chainplan.stages.flatten_stages`). Any other model, or a call with more
arguments, is captured and split (:func:`chainplan.graph.chain.extract`).
:func:`split_of` describes the result without measuring anything (``chainplan.stages``);
:func:`profiled_chain` gives the profiler the stages, their names and the chain input, with
the step's side values bound while it measures, and says how much memory those take.

Side values are counted once, in ``side_bytes``: the distinct storages of the tensors the
stages read besides their input (side arguments, the prelude's results; never the model's
parameters or buffers), the gradients of those that need one, and what the prelude's graph
keeps for its backward. They stay in memory for the whole step, so the profiler adds them to
every operation's overheads (docs/formats.md, "Side inputs").
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from chainplan.errors import ProfileError
from chainplan.graph.chain import ExtractedChain, extract
from chainplan.graph.describe import ChainSplit, StageInfo
from chainplan.profiler.saved import SavedTensorProbe
from chainplan.runtime.side import SideInputs
from chainplan.sequential import flatten_stages

__all__ = ["ProfiledChain", "bound_side", "declared", "profiled_chain", "split_of",
           "stage_names"]


def declared(model: nn.Module, args: Sequence[Any], kwargs: dict[str, Any]) -> bool:
    """Whether ``model`` called with one tensor and these extra arguments is the chain of
    its declared stages (an ``nn.Sequential`` called with one tensor).

    Raises:
        ProfileError: an ``nn.Sequential`` given more arguments (often a misspelt option,
            which would otherwise reach the model as a keyword argument).
    """
    if not isinstance(model, nn.Sequential):
        return False
    if args or kwargs:
        extra = [f"{len(args)} more positional"] if args else []
        extra += [f"keyword {k!r}" for k in kwargs]
        raise ProfileError(f"an nn.Sequential takes one tensor, got {', '.join(extra)} "
                           "(a misspelt option? profile() takes loss_fn, target, repeats, "
                           "warmup, name, path, ingest, progress, spread_warning, reuse)")
    return True


def split_of(model: nn.Module, args: Sequence[Any], kwargs: dict[str, Any]) -> ChainSplit:
    """The split :func:`chainplan.stages` shows for ``model(*args, **kwargs)``; a graph is
    captured in training mode, as ``chainplan.profile`` captures it."""
    if args and declared(model, args[1:], kwargs):
        return _sequential_split(model, args[0])
    was = model.training
    model.train()
    try:
        return extract(model, tuple(args), dict(kwargs)).split
    finally:
        model.train(was)


def stage_names(model: nn.Module, stages: Sequence[nn.Module]) -> list[str]:
    """``path:Type`` of each declared stage (``k:Type`` when it has no path)."""
    paths = {id(m): name for name, m in model.named_modules() if name}
    return [f"{paths.get(id(st), k)}:{type(st).__name__}" for k, st in enumerate(stages, 1)]


def _sequential_split(model: nn.Module, x: torch.Tensor) -> ChainSplit:
    parts = flatten_stages(model)
    names = stage_names(model, parts)
    infos = []
    with torch.no_grad():
        for k, (st, name) in enumerate(zip(parts, names, strict=True), start=1):
            x = st(x)
            params = sum(p.numel() * p.element_size() for p in st.parameters())
            infos.append(StageInfo(k, name, (name.rsplit(":", 1)[0],), 0, tuple(x.shape),
                                   str(x.dtype), x.numel() * x.element_size(), params))
    return ChainSplit(type(model).__name__, tuple(infos), (), 0, (), "sequential")


def _same(end: torch.Tensor) -> Any:
    return end


def _no_loss(output: Any) -> torch.Tensor | None:
    return None


@dataclass(frozen=True)
class ProfiledChain:
    """What the profiler measures: the stages, their names, the chain input a_0, and what
    follows the chain.

    Attributes:
        stages: the stages, in order.
        names: their names.
        input: the chain input a_0 (the first tensor argument).
        side_bytes: memory the side values hold through the step (module docstring).
        split: the split, for a model extracted from its graph (None when declared).
        finish: what ``forward`` returns, from the chain's end (the epilogue of
            :mod:`chainplan.graph.outputs`; the end itself for a Sequential).
        model_loss: the loss ``forward`` computed, from what ``finish`` returned (None
            when it computes none).
        computes_loss: whether ``forward`` computes its loss (``labels=``).
        holds_end: whether what ``forward`` returns holds the chain's end next to the
            loss (a ``ModelOutput`` with its ``logits``): a training loop keeping the
            output object through ``loss.backward()`` keeps a_L.
        logits_dropped: whether a language model's logits were left out of what
            ``forward`` returns, its head fused with its loss (:mod:`chainplan.graph.fuseloss`).
    """

    stages: list[nn.Module]
    names: list[str]
    input: torch.Tensor
    side_bytes: int = 0
    split: ChainSplit | None = None
    finish: Callable[[torch.Tensor], Any] = _same
    model_loss: Callable[[Any], torch.Tensor | None] = _no_loss
    computes_loss: bool = False
    holds_end: bool = False
    logits_dropped: bool = False


@contextlib.contextmanager
def profiled_chain(model: nn.Module, args: Sequence[Any], kwargs: dict[str, Any], *,
                   keep_logits: bool = False) -> Iterator[ProfiledChain]:
    """The chain ``model`` is for a call ``model(*args, **kwargs)``, its side values bound
    (and their gradients allocated, as weight gradients are) while the block runs;
    ``keep_logits`` as for :func:`~chainplan.graph.chain.extract`.

    Raises:
        CaptureError: the model cannot be captured (see :func:`stages`).
    """
    if args and declared(model, args[1:], kwargs):
        parts = flatten_stages(model)
        yield ProfiledChain(parts, stage_names(model, parts), args[0])
        return
    chain = extract(model, tuple(args), dict(kwargs), keep_logits=keep_logits)
    x, side, held = bound_side(chain, model, args, kwargs)
    for leaf in side.leaves:
        leaf.grad = torch.zeros_like(leaf)  # outside every stage's measurement
    outs = chain.outputs
    try:
        with side.scope():
            yield ProfiledChain(list(chain.stages), chain.names, x, held, chain.split,
                                chain.finish,
                                outs.loss_of, outs.loss_index is not None,
                                outs.loss_index is not None and not outs.plain,
                                chain.logits_dropped)
    finally:
        for leaf in side.leaves:
            leaf.grad = None


def bound_side(chain: ExtractedChain, model: nn.Module, args: Sequence[Any],
               kwargs: dict[str, Any]) -> tuple[torch.Tensor, SideInputs, int]:
    """Bind a call (with gradients, as a training step does): the chain input, the side
    values, and the bytes they hold through the step (module docstring)."""
    with torch.enable_grad(), SavedTensorProbe(module=model) as probe:
        x, side = chain.bind(tuple(args), dict(kwargs))
    kept = probe.saved_bytes if side.sources else 0
    return x, side, side_bytes(side, model) + kept


def side_bytes(side: SideInputs, model: nn.Module) -> int:
    """Bytes the side values hold: their distinct storages, the model's own tensors left
    out, plus one gradient per value that needs one."""
    own = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
    seen: set[int] = set()
    total = 0
    for v in side.values.values():
        ptr = v.untyped_storage().data_ptr()
        if ptr and ptr not in own and ptr not in seen:
            seen.add(ptr)
            total += int(v.untyped_storage().nbytes())
    return total + sum(leaf.numel() * leaf.element_size() for leaf in side.leaves)
