"""Profiling a model of towers joined at the loss: each tower once, then the join.

``chainplan.profile(model, images, tokens, loss_fn=...)`` comes here when the model is towers
joined at the loss (:func:`chainplan.towers.detect.find_towers`). Each distinct tower is cut
into stages (:mod:`chainplan.towers.parts`) and measured stage by stage on the input of the
first branch that runs it, with the recipe of a chain (``chainplan.profiler.stagemeasure``): a
tower several inputs go through (a Siamese network) is measured once. The join and the loss
are the loss stage (:mod:`chainplan.towers.measure`).

The profile file has the stages of each tower in turn (names prefixed with the tower's
path), then the loss, and says in its schema metadata which tower each branch runs and the
size of each branch's input (key ``towers``, docs/formats.md): the Go side turns it into a
``chainplan.multichain/v1`` bundle. A branch whose input needs a gradient keeps it
(``keep_input_grad``). Memory held through the whole step (a tower's side values, e.g. a
mask a graph-captured tower reads) is added to every operation's overheads, as for a chain.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
from torch import nn
from torch.utils import _pytree as pytree

from chainplan import _bind
from chainplan.errors import ProfileError
from chainplan.graph.capture import CaptureError
from chainplan.graph.split import side_bytes
from chainplan.profiler.document import Profile
from chainplan.profiler.filename import check_profile_name, new_profile_path
from chainplan.profiler.labels import compute_dtype, device_name, naming_stage
from chainplan.profiler.signature import model_signature
from chainplan.profiler.sizes import nbytes, storage_nbytes
from chainplan.profiler.spread import warn_if_spread
from chainplan.profiler.stagemeasure import StageMeasurement, measure_stage
from chainplan.profiler.stored import call_signature, find_stored
from chainplan.profilerow import MEASUREMENT_REVISION, ProfileMetadata, ProfileRow
from chainplan.reuse import loss_name
from chainplan.schema import write_profile
from chainplan.towers.detect import TowerSplit, find_towers, model_inputs
from chainplan.towers.measure import measure_join
from chainplan.towers.parts import TowerChain, given_towers, tower_chain

_log = logging.getLogger("chainplan.profile")

__all__ = ["TowersProfile", "profile_towers"]

LossFn = Callable[..., torch.Tensor]


@dataclass(frozen=True)
class TowersProfile(Profile):
    """The profile of a model of towers joined at the loss.

    Attributes:
        towers: the towers found and the branches that run them.
        tower_stages: the number of stages of each tower, in order.
    """

    towers: TowerSplit | None = field(default=None, compare=False)
    tower_stages: tuple[int, ...] = ()

    @property
    def branch_stages(self) -> tuple[int, ...]:
        """L_j, the stages of each branch."""
        assert self.towers is not None
        return tuple(self.tower_stages[b.tower] for b in self.towers.branches)


def join_of(model: nn.Module, split: TowerSplit, inputs: Sequence[Any], kwargs: dict[str, Any],
            loss_fn: LossFn | None, target: torch.Tensor | None,
            finish: Sequence[Callable[[torch.Tensor], Any]] | None = None
            ) -> Callable[..., object]:
    """The join: ``model(*inputs, **kwargs)`` with the towers' results given (through their
    heads, ``finish``: :func:`~chainplan.towers.parts.given_towers`), then the loss
    (``loss_fn(*outputs[, target])`` for a tuple of outputs, ``loss_fn(output[, target])``
    for one)."""
    flat = model_inputs(inputs, kwargs)

    def join(*outs: torch.Tensor) -> object:
        with given_towers(split, outs, flat, finish):
            result = model(*inputs, **kwargs)
        if loss_fn is None:
            return result
        parts = tuple(result) if isinstance(result, (tuple, list)) else (result,)
        return loss_fn(*parts, target) if target is not None else loss_fn(*parts)
    return join


def profile_towers(model: nn.Module, split: TowerSplit, inputs: Sequence[Any],
                   kwargs: dict[str, Any], *, loss_fn: LossFn | None,
                   target: torch.Tensor | None, repeats: int, warmup: int, name: str,
                   path: Any, ingest: bool, progress: bool,
                   spread_warning: float | None, reuse: bool = False) -> TowersProfile:
    """Measure ``model``'s towers and join (module docstring); the arguments are
    :func:`chainplan.profile`'s. With ``reuse`` (and ``ingest``, no ``path``), the stored
    profile of the same call is returned instead, as for a chain
    (:mod:`chainplan.profiler.stored`: the call signature covers every input's shape).

    Raises:
        ProfileError: a stage or the join fails while measured (naming it), or ``name``
            cannot name a profile (before measuring).
    """
    start = time.perf_counter()
    name = check_profile_name(name)
    flat = model_inputs(inputs, kwargs)
    device = flat[split.branches[0].input].device
    meta = _metadata(model, split, inputs, kwargs, name=name, loss=loss_name(loss_fn),
                     target=target, repeats=repeats, warmup=warmup)
    if reuse and ingest and path is None:
        stored = _stored(meta, split, flat, loss_name(loss_fn))
        if stored is not None:
            stored_id, stored_path, stored_rows, stored_names, stored_lengths = stored
            _log.info("profile of %s: reused the stored profile of the same call (run %d)",
                      name, stored_id)
            return TowersProfile(path=stored_path, run_id=stored_id, model_name=name,
                                 stage_names=stored_names, rows=tuple(stored_rows),
                                 seconds=time.perf_counter() - start, reused=True,
                                 towers=split, tower_stages=stored_lengths)
    chains: list[TowerChain] = []
    measured: list[list[tuple[StageMeasurement, int]]] = []
    outputs: list[torch.Tensor | None] = [None] * len(split.branches)
    a0: list[int] = [0] * len(split.branches)
    resident = 0
    total = 0
    for t, tower in enumerate(split.towers):
        calls = split.calls_of(t)
        first = split.branches[calls[0]]
        chain = tower_chain(tower, split.names[t], first, flat)
        chains.append(chain)
        with contextlib.ExitStack() as bound:
            x, side = chain.bind(first, flat)
            if side is not None:
                bound.enter_context(side.scope())
                resident += side_bytes(side, tower)
            rows: list[tuple[StageMeasurement, int]] = []
            for stage, sname in zip(chain.stages, chain.names, strict=True):
                total += 1
                with naming_stage(total, sname):
                    m = measure_stage(stage, x, repeats=repeats, warmup=warmup, device=device)
                rows.append((m, storage_nbytes(x)))
                x = m.output
            measured.append(rows)
        for j in calls:  # a shared tower: each branch's own input, the same output shape
            xj, _ = chain.bind(split.branches[j], flat)
            a0[j] = storage_nbytes(xj)
            if j == calls[0]:
                outputs[j] = x
            else:
                with torch.no_grad():  # the join is measured on every branch's own output
                    outputs[j] = chain.run(split.branches[j], flat).detach()
    outs = [o for o in outputs if o is not None]
    heads = _heads(split, chains, flat)
    with naming_stage(total + 1, "join"):
        jm = measure_join(join_of(model, split, inputs, kwargs, loss_fn, target, heads), outs,
                          model=model, repeats=repeats, warmup=warmup, device=device)
    rows_out = _rows(measured, chains, jm, outs, resident, loss_name(loss_fn))
    lengths = [len(c.stages) for c in chains]
    keep = [bool(flat[b.input].requires_grad) for b in split.branches]
    towers_meta = {"lengths": lengths, "branches": [b.tower for b in split.branches],
                   "input_bytes": a0, "names": list(split.names), "keep_input_grad": keep}
    if path is None:
        path = new_profile_path(name, "towers")
    out = write_profile(Path(path), rows_out,
                        {**meta.as_dict(), "towers": json.dumps(towers_meta)})
    run_id = None
    if ingest:
        run_id = _bind.ingest(str(out))
    prof = TowersProfile(path=out, run_id=run_id, model_name=name,
                         stage_names=tuple(n for c in chains for n in c.names),
                         rows=tuple(rows_out), seconds=time.perf_counter() - start,
                         side_bytes=resident, towers=split, tower_stages=tuple(lengths))
    warn_if_spread(prof.spread, spread_warning, what=f"profile of {name}")
    return prof


def _metadata(model: nn.Module, split: TowerSplit, inputs: Sequence[Any],
              kwargs: dict[str, Any], *, name: str, loss: str, target: torch.Tensor | None,
              repeats: int, warmup: int) -> ProfileMetadata:
    """The profile's metadata: the first tower input's shape, and the call signature of the
    whole call (every input), which finds it again (:mod:`chainplan.profiler.stored`)."""
    first_input = model_inputs(inputs, kwargs)[split.branches[0].input]
    device = first_input.device
    call = call_signature(tuple(inputs), kwargs, loss=loss, target=target,
                          device_name=device_name(device))
    return ProfileMetadata(
        model_name=name, model_signature=model_signature(model, device),
        torch_version=torch.__version__, device=str(device), device_name=device_name(device),
        dtype=compute_dtype(model, first_input),
        batch_size=int(first_input.shape[0]) if first_input.dim() > 0 else 1,
        input_shape=list(first_input.shape), threads=torch.get_num_threads(),
        timing_method="cuda_event" if device.type == "cuda" else "perf_counter",
        warmup_reps=warmup, reps=repeats,
        extra={"call_signature": call, "measurement_revision": MEASUREMENT_REVISION})


def _stored(meta: ProfileMetadata, split: TowerSplit, inputs: Sequence[Any], loss: str
            ) -> tuple[int, Path, list[ProfileRow], tuple[str, ...], tuple[int, ...]] | None:
    """The stored profile of this call (its run, file, rows, stage names and tower lengths)
    when its towers are these towers cut as now; None when there is none."""
    chains = [tower_chain(tower, split.names[t], split.branches[split.calls_of(t)[0]], inputs)
              for t, tower in enumerate(split.towers)]
    names = [n for c in chains for n in c.names]
    found = find_stored(meta, loss, names)
    if found is None:
        return None
    run_id, path, rows = found
    return run_id, path, rows, tuple(names), tuple(len(c.stages) for c in chains)


def _heads(split: TowerSplit, chains: Sequence[TowerChain], inputs: Sequence[Any]
           ) -> list[Callable[[torch.Tensor], Any]]:
    """Per branch, its tower's head (:meth:`TowerChain.finish`) with the branch's own side
    values, which the head may read (the positions a text pooler gathers)."""
    heads: list[Callable[[torch.Tensor], Any]] = []
    for b in split.branches:
        chain = chains[b.tower]
        _, side = chain.bind(b, inputs)
        heads.append(functools.partial(chain.finish, side=side))
    return heads


def _rows(measured: list[list[tuple[StageMeasurement, int]]], chains: list[TowerChain],
          jm: Any, outs: list[torch.Tensor], resident: int, loss_name: str) -> list[ProfileRow]:
    """One row per stage of each tower and repetition, then the join's.

    Every tower stage's overheads also count the K output gradients δ_{L_j}: autograd hands
    them to the executor's join node at once and holds them until its backward phase ends
    (:mod:`chainplan.towers.executor`), while the model counts each only until its tower's
    backward starts. Counted in the forward phase too, where they do not exist yet
    (conservative): a recomputation in the backward phase runs while they are held. With a
    tower's chain ending at its last hidden state (a HuggingFace ``ModelOutput`` tower) they
    are a full activation each, no longer an embedding's few kilobytes."""
    in_bytes = sum(nbytes(o) for o in pytree.tree_leaves(outs))  # the gradients: dense
    # A model returning its own loss among its outputs: the loop holds them to the step's
    # end (JoinMeasurement.held_bytes), in every tower stage's overheads, as chain_end
    # counts a language model's logits (exact in the backward phase, over before it).
    held = resident + in_bytes + jm.held_bytes
    rows: list[ProfileRow] = []
    k = 0
    for tower_rows, chain in zip(measured, chains, strict=True):
        for (m, stage_in), sname in zip(tower_rows, chain.names, strict=True):
            k += 1
            bwd = m.bwd_times_s or tuple(0.0 for _ in m.fwd_times_s)
            for r, (f, b) in enumerate(zip(m.fwd_times_s, bwd, strict=True)):
                rows.append(ProfileRow(k, sname, r, f, b, stage_in, m.out_bytes, m.saved_bytes,
                                       m.fwd_tmp_bytes + held, m.bwd_tmp_bytes + held,
                                       m.param_bytes))
    for r, (f, b) in enumerate(zip(jm.fwd_times_s, jm.bwd_times_s, strict=True)):
        rows.append(ProfileRow(k + 1, loss_name, r, f, b, in_bytes, 0, 0,
                               jm.fwd_tmp_bytes + resident, jm.bwd_tmp_bytes + resident, 0,
                               stage_kind="loss"))
    return rows



def profile_towers_if_any(model: nn.Module, inputs: Sequence[Any], kwargs: dict[str, Any],
                          **options: Any) -> TowersProfile | None:
    """:func:`profile_towers` when ``model(*inputs, **kwargs)`` is towers joined at the loss
    (:func:`chainplan.towers.detect.find_towers`, the model in training mode), else None:
    the caller profiles it as one chain."""
    was = model.training
    model.train()
    try:
        split = find_towers(model, inputs, kwargs)
        if split is None or not _heads_cut(split, model_inputs(inputs, kwargs)):
            return None
        _check_loss_fn(options.get("loss_fn"))
        return profile_towers(model, split, inputs, kwargs, **options)
    finally:
        model.train(was)


def _heads_cut(split: TowerSplit, inputs: Sequence[Any]) -> bool:
    """Whether every tower that returns a structure is cut with a light head
    (:mod:`chainplan.towers.parts`); one that is not (an LSTM returning its output and its
    states, values from different depths) leaves the model to the single-chain capture, as
    before towers could return structures. The cut is cached for the profile."""
    for t, tower in enumerate(split.towers):
        if t < len(split.structured) and split.structured[t]:
            try:
                tower_chain(tower, split.names[t], split.branches[split.calls_of(t)[0]], inputs)
            except CaptureError as e:
                _log.info("towers of the model not used: tower %s is not one chain with a "
                          "light head (%s)", split.names[t], e)
                return False
    return True


def _check_loss_fn(loss_fn: object) -> None:
    if loss_fn is not None and not callable(loss_fn):
        raise ProfileError(f"loss_fn must be callable (got {type(loss_fn).__name__})")
