"""The call chainplan captures and runs: a model's forward as a training step calls it.

Libraries written for generation and evaluation return more than a training step needs.
A model whose ``forward`` takes ``use_cache`` (every HuggingFace transformers decoder)
returns a key/value cache for the next decoding step unless told not to: a cache object
that a graph cannot hold, and every layer's keys and values kept alive until the step
ends. A training step never reads it, and the libraries' own activation checkpointing
turns it off for training (transformers: "use_cache=True is incompatible with gradient
checkpointing. Setting use_cache=False"); :func:`training_call` does the same for every
call chainplan captures or runs with gradients.

The call is also put in one canonical form: keyword arguments in the order of
``forward``'s parameters, so that ``model(input_ids=ids, attention_mask=m)`` and
``model(attention_mask=m, input_ids=ids)`` are the same call, and the chain input a_0
(the first tensor argument) is the one the signature puts first (``input_ids``, not the
mask).

**Encoder-decoders.** A sequence-to-sequence model (transformers' ``config.is_encoder_decoder``:
T5, BART, Pegasus, Marian, mBART, ...) called with ``labels=`` and no decoder input makes its
decoder input itself, the labels shifted right (``prepare_decoder_input_ids_from_labels``,
the very function its ``forward`` calls). :func:`training_call` passes it explicitly, and
the chain input a_0 is the decoder's input (:func:`decoder_input`), not ``input_ids``: the
decoder is the chain, and the encoder, whose output every decoder layer's cross-attention
reads, runs before it once per step and its output is a side value of the chain
(docs/executors.md, "Encoder-decoders"). Taken from ``input_ids``, the chain would have
no cut point after the encoder: the encoder's output is read at every decoder layer.
"""

from __future__ import annotations

import inspect
import sys
import warnings
from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from chainplan.errors import ChainplanWarning

__all__ = ["CacheWarning", "chain_input", "decoder_input", "encoder_decoder",
           "forward_parameters", "training_call"]


class CacheWarning(ChainplanWarning):
    """A training call asked for a generation cache (``use_cache=True``); chainplan turns
    it off, as the libraries' own gradient checkpointing does."""


def forward_parameters(model: nn.Module) -> list[str]:
    """The names of the parameters of ``forward`` as the model's class defines it (not an
    instance attribute standing in for it while chainplan records), in order, ``self``,
    ``*args`` and ``**kwargs`` left out; empty when the signature cannot be read."""
    try:
        params = list(inspect.signature(type(model).forward).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    skip = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    return [p.name for p in params if p.kind not in skip]


def training_call(model: nn.Module, args: tuple[Any, ...],
                  kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """The call a training step makes for ``model(*args, **kwargs)`` (module docstring).

    Returns ``(args, kwargs)`` with the keyword arguments in signature order (unknown
    ones after, as given) and ``use_cache=False`` when ``forward`` takes ``use_cache``.

    Warns:
        CacheWarning: the call passed ``use_cache=True`` (it is turned off).
    """
    names = forward_parameters(model)
    order = {name: i for i, name in enumerate(names)}
    ordered = dict(sorted(kwargs.items(), key=lambda kv: order.get(kv[0], len(order))))
    if "use_cache" in order and order["use_cache"] >= len(args):  # not given positionally
        if ordered.get("use_cache"):
            warnings.warn(
                f"{type(model).__name__} was called with use_cache=True in a training step; "
                "chainplan turns the generation cache off (use_cache=False), as gradient "
                "checkpointing must: the cache would hold every layer's keys and values "
                "through the step", CacheWarning, stacklevel=4)
        ordered["use_cache"] = False
        ordered = dict(sorted(ordered.items(), key=lambda kv: order.get(kv[0], len(order))))
    if (encoder_decoder(model) and "decoder_input_ids" in order
            and isinstance(ordered.get("labels"), torch.Tensor)
            and ordered.get("decoder_input_ids") is None
            and ordered.get("decoder_inputs_embeds") is None
            and order["decoder_input_ids"] >= len(args)):
        shift = _label_shift(model)
        if shift is not None:  # what forward computes from labels when given no decoder input
            ordered["decoder_input_ids"] = shift(ordered["labels"])
            ordered = dict(sorted(ordered.items(), key=lambda kv: order.get(kv[0], len(order))))
    return tuple(args), ordered


def _label_shift(model: nn.Module) -> Callable[[torch.Tensor], torch.Tensor] | None:
    """How ``model``'s forward makes its decoder input from ``labels``: its
    ``prepare_decoder_input_ids_from_labels`` where it has one; else its modeling module's
    ``shift_tokens_right(input_ids, pad_token_id, decoder_start_token_id)`` with its
    config's two ids, the call the forwards of BlenderbotSmall, M2M100 and their kin make
    when given labels and no decoder input; else None (the capture refuses, naming
    ``decoder_input_ids=``)."""
    prepare: Any = getattr(model, "prepare_decoder_input_ids_from_labels", None)
    if callable(prepare):
        return lambda labels: prepare(labels=labels)
    fn: Any = getattr(sys.modules.get(type(model).__module__), "shift_tokens_right", None)
    cfg = getattr(model, "config", None)
    pad = getattr(cfg, "pad_token_id", None)
    start = getattr(cfg, "decoder_start_token_id", None)
    if not callable(fn) or pad is None or start is None:
        return None
    try:
        params = list(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return None
    if params != ["input_ids", "pad_token_id", "decoder_start_token_id"]:
        return None
    return lambda labels: fn(labels, pad, start)


def encoder_decoder(model: nn.Module) -> bool:
    """Whether ``model`` is a transformers sequence-to-sequence model (module docstring)."""
    return bool(getattr(getattr(model, "config", None), "is_encoder_decoder", False))


def decoder_input(model: nn.Module, kwargs: dict[str, Any]) -> str | None:
    """The keyword argument that is the chain input a_0 of an encoder-decoder's training
    call (``decoder_input_ids`` or ``decoder_inputs_embeds``, whichever is a tensor), or
    None for any other model or call (a_0 is then the first tensor argument)."""
    if not encoder_decoder(model):
        return None
    for name in ("decoder_input_ids", "decoder_inputs_embeds"):
        if isinstance(kwargs.get(name), torch.Tensor):
            return name
    return None


def chain_input(model: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The chain input a_0 of a call: its first tensor argument, positional arguments first,
    then keywords in signature order (an encoder-decoder's: its decoder input,
    :func:`decoder_input`); None when there is no tensor argument."""
    args, kwargs = training_call(model, args, kwargs)
    name = decoder_input(model, kwargs)
    if name is not None:
        return kwargs[name]
    for v in pytree.tree_leaves((args, kwargs)):
        if isinstance(v, torch.Tensor):
            return v
    return None
