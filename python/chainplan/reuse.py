"""Stored profiles that can stand in for a new one, and scaling one to another batch size.

:class:`~chainplan.checkpointed.Checkpointed` asks here before profiling: a run in the
database with the same model signature (:mod:`chainplan.profiler.signature`), compute
dtype, device, torch version and loss is reused as is when its input shape is the new
input's, and scaled when only the batch dimension (the first) differs.

Scaling assumes what holds for the activations of a chain model: every size and time of a
stage is proportional to the batch size (parameters excepted). Sizes that do not scale (a
fixed workspace) make the scaled profile an estimate; ``Checkpointed(rescale=False)``
profiles the new shape instead.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.ipc as ipc
import torch
from torch import nn

from chainplan import _bind
from chainplan.errors import ChainplanError, NotFoundError
from chainplan.graph.capture import CaptureError
from chainplan.graph.chain import extract
from chainplan.profiler.labels import compute_dtype
from chainplan.profiler.signature import model_signature
from chainplan.profilerow import measured_now
from chainplan.schema import read_metadata
from chainplan.source import envelope

__all__ = ["find_profile", "profile_keeps_logits", "run_keeps_logits"]


@dataclass(frozen=True)
class StoredRun:
    """A stored profile of the model: its run id and the input shape it was taken with."""

    run_id: int
    input_shape: tuple[int, ...]

    @property
    def batch(self) -> int:
        return self.input_shape[0]


def find_profile(model: Any, sample: Any, *, loss_fn: Callable[..., object] | None = None) \
        -> int | None:
    """The run id of the newest stored profile of ``model`` taken with ``sample``'s shape,
    or None: what ``chainplan.profile(model, sample, loss_fn=loss_fn)`` would measure
    again. Planning from it instead of profiling anew makes the same launch give the same
    plan (a profile taken on a busy machine differs from the last one).

    A run matches when its model signature (module tree with its settings, parameter and
    buffer names, shapes and dtypes, device, torch version), compute dtype, loss (by name)
    and input shape are the ones given.
    """
    if not isinstance(sample, torch.Tensor):
        raise TypeError(f"find_profile() takes the sample input tensor "
                        f"(got {type(sample).__name__})")
    runs = stored_runs(signature=model_signature(model, sample.device),
                       dtype=compute_dtype(model, sample), device=str(sample.device),
                       torch_version=torch.__version__, loss=loss_name(loss_fn))
    run, _ = choose(runs, tuple(sample.shape), rescale=False)
    return run.run_id if run is not None else None


def loss_name(loss_fn: Callable[..., object] | None) -> str:
    """The name ``chainplan.profile`` stores for the loss stage (``"none"`` without a loss)."""
    if loss_fn is None:
        return "none"
    return str(getattr(loss_fn, "__name__", type(loss_fn).__name__))


def profile_keeps_logits(path: str | os.PathLike[str]) -> bool:
    """Whether the profile file at ``path`` was taken with a language model's logits kept
    beside its loss (its ``keep_logits`` metadata; a file written before the key kept
    them); False for a file that cannot be read (the default capture)."""
    try:
        meta = read_metadata(path)
    except ChainplanError:
        return False
    return meta.get("keep_logits", "true") == "true"


def run_keeps_logits(run_id: int | None) -> bool:
    """:func:`profile_keeps_logits` of stored run ``run_id``'s profile file (False without a
    run, or for a run the database no longer has)."""
    if run_id is None:
        return False
    try:
        path = str(_bind.run(run_id)["source_path"])
    except ChainplanError:
        return False
    return profile_keeps_logits(path)


def model_loss_name(model: object, logits_dropped: bool = False) -> str:
    """The name of the loss stage when ``forward`` computes the loss itself (a HuggingFace
    model called with ``labels=``): ``LlamaForCausalLM.loss``, or
    ``LlamaForCausalLM.loss (no logits)`` when its logits were left out and its head fused
    with the loss (a stored profile is reused only for a call captured the same way)."""
    return f"{type(model).__name__}.loss" + (" (no logits)" if logits_dropped else "")


def chain_loss_label(model: nn.Module, loss_fn: Callable[..., object] | None,
                     args: tuple[Any, ...], kwargs: dict[str, Any], *,
                     keep_logits: bool = False) -> str | None:
    """The name the loss stage of a stored chain profile of ``model(*args, **kwargs)`` has:
    ``loss_fn``'s, the model's own loss (:func:`model_loss_name`, captured with or without
    its logits as ``keep_logits`` says), or ``none``; None when
    the call is not one chain. A model whose graph does not split into one chain
    (``CLIPModel`` called with ``return_loss=True``: towers joined at the loss) has no
    stored chain run; :func:`chainplan.profile` finds its stored towers by their call
    signature (:mod:`chainplan.towers.profile`), or measures the call and raises the
    capture's error if it is neither one chain nor towers."""
    if loss_fn is not None or isinstance(model, nn.Sequential):
        return loss_name(loss_fn)
    try:
        chain = extract(model, args, kwargs, keep_logits=keep_logits)
    except CaptureError:
        return None
    if chain.outputs.loss_index is None:
        return "none"
    return model_loss_name(model, chain.logits_dropped)


def stored_runs(*, signature: str, dtype: str, device: str, torch_version: str,
                loss: str, call_signature: str = "") -> list[StoredRun]:
    """The plannable stored runs of a model, newest first.

    A run qualifies when its signature, compute dtype, device and torch version are these,
    its loss stage has this name (so its loss cost is the one trained with), its call
    signature is ``call_signature`` when one is given, and every stage has its saved size
    measured (``chainplan.record`` profiles may lack it). A profile of towers joined at the
    loss does not qualify: its input shape is the first tower's only, and the others' (a
    text length) matter as much.
    """
    try:
        rows = _bind.runs(model_signature=signature, dtype=dtype, device=device,
                          torch_version=torch_version, loss_name=loss, saved_measured=True,
                          call_signature=call_signature)
    except NotFoundError:
        return []  # nothing stored yet (reading does not create the database)
    out = []
    for row in rows:
        if row.get("towers") or not _measured_now(str(row.get("source_path", ""))):
            continue
        shape = tuple(int(d) for d in row["input_shape"])
        if shape:  # a run without its input shape cannot be matched to an input
            out.append(StoredRun(int(row["run_id"]), shape))
    return out


def choose(runs: Sequence[StoredRun], shape: Sequence[int], *,
           rescale: bool) -> tuple[StoredRun | None, bool]:
    """The run to plan ``shape`` from, and whether it must be scaled.

    Returns:
        ``(run, False)`` for the newest run of exactly this shape; else, when ``rescale``
        and some runs differ from ``shape`` in the batch dimension only, ``(run, True)``
        for the one whose batch is closest by ratio (the newest among equals); else
        ``(None, False)``.
    """
    shape = tuple(shape)
    for run in runs:
        if run.input_shape == shape:
            return run, False
    if not rescale or not shape or shape[0] < 1:
        return None, False
    same = [r for r in runs if r.input_shape[1:] == shape[1:] and r.batch > 0]
    if not same:
        return None, False
    # min() keeps the first (newest) among equal distances.
    return min(same, key=lambda r: abs(math.log(shape[0] / r.batch))), True


def scale_chain(chain: dict[str, object], factor: float) -> dict[str, object]:
    """A copy of a ``chainplan.chain/v1`` document for ``factor`` times the batch size.

    Every ``*_bytes`` value but ``param_bytes`` is multiplied and rounded up, and every
    ``*_time`` value multiplied; names and unknown fields are kept.
    """

    def scaled(doc: dict[str, object]) -> dict[str, object]:
        out: dict[str, object] = {}
        for key, v in doc.items():
            out[key] = v
            if not isinstance(v, (int, float)) or isinstance(v, bool):
                continue
            if key.endswith("_bytes") and key != "param_bytes":
                out[key] = math.ceil(v * factor)
            elif key.endswith("_time"):
                out[key] = v * factor
        return out

    doc = scaled(chain)
    stages = chain.get("stages")
    if isinstance(stages, list):
        doc["stages"] = [scaled(st) for st in stages]
    loss = chain.get("loss")
    if isinstance(loss, dict):
        doc["loss"] = scaled(loss)
    return doc


def write_scaled_chain(run: StoredRun, batch: int, folder: Path) -> Path:
    """Write ``run``'s chain scaled to ``batch`` into ``folder``; returns the file.

    The name says what it holds (``run<id>-batch<b>.chain.json``), so the file can be
    planned again with ``chainplan solve --chain``; it is written to a temporary name and
    renamed, so concurrent writers of the same file never leave half of one.
    """
    chain = json.loads(_bind.chain(envelope(run.run_id, "write_scaled_chain")))
    doc = scale_chain(chain, batch / run.batch)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"run{run.run_id}-batch{batch}.chain.json"
    tmp = path.with_name(f"{path.name}.{os.getpid()}.part")
    tmp.write_text(json.dumps(doc, indent=1))
    os.replace(tmp, path)
    return path


def _measured_now(path: str) -> bool:
    """Whether the profile file of a stored run was measured at this chainplan's
    measurement revision (:data:`chainplan.profilerow.MEASUREMENT_REVISION`): its schema
    metadata only is read. A run whose file is gone or unreadable is not planned from."""
    try:
        with ipc.open_file(path) as reader:
            meta = {k.decode(): v.decode() for k, v in (reader.schema.metadata or {}).items()}
    except Exception:  # gone, moved or damaged: a new profile is taken instead
        return False
    return measured_now(meta)
