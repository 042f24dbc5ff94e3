"""Reusing a stored profile of the same call instead of measuring again.

``chainplan.profile`` writes with every profile a **call signature**: a digest of the call
it measured (the structure of the arguments, every tensor's shape, dtype, device and
whether it needs a gradient, the other arguments' values), of the loss and its target's
shape, and of what sets the times besides the model: the thread count and the device's
name. A later ``profile()`` of the same model (the same model signature,
:mod:`chainplan.profiler.signature`) with the same call, compute dtype, device, torch
version and loss, whose split gives the same stages, returns the stored profile: a new
process does not measure again. ``profile(..., reuse=False)`` always measures.

The stored run's Arrow file is read back for the rows; a run whose file is gone or
unreadable is passed over (its rows in the database are kept).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch

from chainplan import _bind
from chainplan.errors import NotFoundError
from chainplan.graph.chain import args_key
from chainplan.profilerow import ProfileMetadata, ProfileRow, measured_now, signature
from chainplan.schema import read_rows

__all__: list[str] = []

_log = logging.getLogger("chainplan.profile")

# Metadata keys ("true"/"false", "false" when absent) that a stored profile must share with
# the call to answer it: whether the stages' options were measured, and whether the rows
# count a_L as held by the model's output to the end of the step (run.py).
_ANSWERS = ("stage_options", "holds_end")


def call_signature(args: tuple[Any, ...], kwargs: dict[str, Any], *, loss: str,
                   target: Any, device_name: str) -> str:
    """The digest of a profiled call (module docstring); ``args, kwargs`` as a training
    step makes the call (:func:`chainplan.graph.call.training_call`)."""
    tgt = [list(target.shape), str(target.dtype)] if isinstance(target, torch.Tensor) else None
    doc = {"version": 1, "call": repr(args_key(args, kwargs)), "loss": loss, "target": tgt,
           "threads": torch.get_num_threads(), "device_name": device_name}
    return signature(json.dumps(doc, separators=(",", ":"), sort_keys=True))


def find_stored(meta: ProfileMetadata, loss: str,
                names: list[str]) -> tuple[int, Path, list[ProfileRow]] | None:
    """The newest stored run measured for this call whose stages are ``names``, whose
    stage options were measured as this call asks (``meta.extra["stage_options"]``) and
    whose rows count the chain's end as this call needs (``meta.extra["holds_end"]``): its
    run id, file and rows; None when there is none."""
    call = meta.extra.get("call_signature", "")
    if not call:
        return None
    try:  # a SQLite file or a PostgreSQL store (a DSN is no path to test for existence)
        runs = _bind.runs(model_signature=meta.model_signature, dtype=meta.dtype,
                          device=meta.device, torch_version=meta.torch_version,
                          loss_name=loss, call_signature=call, saved_measured=True)
    except NotFoundError:
        return None  # nothing stored yet (reading does not create the database)
    for run in runs:
        path = Path(str(run["source_path"]))
        try:
            rows, stored_meta = read_rows(path)
        except Exception as err:  # gone, moved or damaged: measure instead
            _log.info("stored profile run %s is not readable (%s); passed over",
                      run["run_id"], err)
            continue
        stages = [r.stage_name for r in rows if r.stage_kind == "stage" and r.rep == 0]
        # Made with other stage options (a file older than the key measured none): its
        # rows lack, or carry, the options this call asks for. Made before the rows counted
        # a_L held by the model's output through the loss backward (a file older than the
        # holds_end key): its loss rows miss one a_L, so a model that returns its loss next
        # to its logits is measured again.
        if any(stored_meta.get(key, "false") != meta.extra.get(key, "false")
               for key in _ANSWERS):
            continue
        if not measured_now(stored_meta):  # measured by an earlier chainplan (profilerow)
            continue
        if stages == names:
            return int(run["run_id"]), path, rows
    return None
