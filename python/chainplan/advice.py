"""Typed results of :func:`chainplan.parallel.advise` and :func:`chainplan.parallel.search3d`.

The documents come from the Go planners (``chainplan.advice/v1``, ``chainplan.search3d/v1``;
docs/parallel.md) and are read field by field, a bad field named by its path. A result of a
stored profile knows its ``advice_id``: :meth:`Advice.record` and :meth:`Search3D.record` store
what a candidate measured when it ran, :meth:`Advice.accuracy` compares them with the
predictions. This module never imports torch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from chainplan.advicerecord import Accuracy, MeasuredCandidate, StoredResult
from chainplan.errors import PlanError
from chainplan.jsonfields import Fields
from chainplan.layout3d import ProcessGroups, RankLayout, process_groups, rank_layout

__all__ = ["Advice", "StrategyEstimate", "Search3D", "Candidate3D", "Stage3D", "SimCheck3D",
           "SimStage3D", "Accuracy", "MeasuredCandidate", "MeasuredLink"]


_C = TypeVar("_C")


def _result(doc: dict[str, Any], fmt: str, what: str) -> Fields:
    """The fields of a stored result, refused unless its format is ``fmt``."""
    f = Fields(doc)
    if f.string("format") != fmt:
        raise PlanError(f"not {what} document (format {f.string('format')!r})")
    return f


def _candidates(f: Fields, read: Callable[[Fields, int], _C]) -> tuple[_C, ...]:
    """The ``candidates`` list of a result, each read with its index."""
    return tuple(read(c, i) for i, c in enumerate(f.objects("candidates")))


@dataclass(frozen=True)
class MeasuredLink:
    """A cluster link whose bandwidth was measured (the store's ``bandwidths`` table, for the
    stored run advised on) and used in place of the cluster file's.

    Attributes:
        node: the node (as the expanded cluster names it). link: ``"intra"`` (between its
            devices), ``"inter"`` (its network interface) or ``"host"`` (device-host copies).
        nominal_bytes_per_s, measured_bytes_per_s: the file's bandwidth and the one used.
        bandwidth_id: the stored row.
    """

    node: str
    link: str
    nominal_bytes_per_s: float
    measured_bytes_per_s: float
    bandwidth_id: int

    @classmethod
    def _read_all(cls, f: Fields) -> tuple[MeasuredLink, ...]:
        return tuple(cls(node=m.string("node"), link=m.string("link"),
                         nominal_bytes_per_s=m.number("nominal_bytes_per_s"),
                         measured_bytes_per_s=m.number("measured_bytes_per_s"),
                         bandwidth_id=m.integer("bandwidth_id"))
                     for m in f.objects("measured_links"))


@dataclass(frozen=True)
class StrategyEstimate:
    """One strategy at one device count (advise): times per epoch, memory per device.

    Attributes:
        rank: position among the feasible candidates by the goal, from 1; 0 if infeasible.
        strategy: ``data``, ``spatial``, ``layer``, ``pipeline``, ``filter``, ``channel``,
            ``df``, ``ds``, ``data+checkpointing`` or ``data+offloading``.
        devices: p. data_degree, split_degree: p1 and p2 of the hybrids (0 otherwise).
        segments: S, a pipeline's micro-batches (0 otherwise).
        feasible: whether it fits and respects its limits; ``infeasible`` says why not.
        epoch_time_s, iteration_time_s, cost_s: seconds; cost is devices × epoch time.
        compute: forward/backward, weight update and recomputation seconds per epoch.
        comm: gradient, layer-wise, halo, gather and point-to-point seconds per epoch.
        memory_bytes, capacity_bytes: what one device needs, and has.
        memory: activation, weight and optimizer bytes of ``memory_bytes``.
        saver: the rotor or pofo plan of ``data+checkpointing``/``data+offloading``.
        warnings: sentences from ParaDL's table of bottlenecks.
    """

    index: int
    rank: int
    strategy: str
    devices: int
    data_degree: int
    split_degree: int
    segments: int
    groups: tuple[tuple[int, int], ...]
    global_batch: int
    samples_per_device: float
    iterations: int
    feasible: bool
    infeasible: str
    epoch_time_s: float
    iteration_time_s: float
    cost_s: float
    compute_s: float
    comm_s: float
    compute: dict[str, float]
    comm: dict[str, float]
    memory_bytes: int
    capacity_bytes: int
    memory: dict[str, int]
    saver: dict[str, Any] | None
    warnings: tuple[str, ...]

    @classmethod
    def _read(cls, f: Fields, index: int) -> StrategyEstimate:
        def sub(key: str) -> dict[str, Any]:
            obj = f.object(key)
            return {} if obj is None else dict(obj.obj)

        groups = tuple((int(g[0]), int(g[1])) for g in f.items("groups") if isinstance(g, list))
        return cls(index=index, rank=f.integer("rank", 0), strategy=f.string("strategy"),
                   devices=f.integer("devices", low=1), data_degree=f.integer("data_degree", 0),
                   split_degree=f.integer("split_degree", 0), segments=f.integer("segments", 0),
                   groups=groups, global_batch=f.integer("global_batch"),
                   samples_per_device=f.number("samples_per_device", 0.0),
                   iterations=f.integer("iterations"), feasible=f.boolean("feasible"),
                   infeasible=f.string("infeasible", ""), epoch_time_s=f.number("epoch_time_s"),
                   iteration_time_s=f.number("iteration_time_s"), cost_s=f.number("cost_s"),
                   compute_s=f.number("compute_s"), comm_s=f.number("comm_s"),
                   compute=sub("compute"), comm=sub("comm"),
                   memory_bytes=f.integer("memory_bytes"),
                   capacity_bytes=f.integer("capacity_bytes"), memory=sub("memory"),
                   saver=sub("saver") or None,
                   warnings=tuple(str(w) for w in f.items("warnings")))


@dataclass(frozen=True)
class Advice(StoredResult):
    """What :func:`chainplan.parallel.advise` returns: the ranked candidates (feasible first).

    Attributes:
        advice_id: where it is stored (0 when not: a chain or profile file).
        candidates: every candidate, feasible ones first by the goal.
        gamma, gamma_source: γ and how it was obtained. notes: sentences about the request.
        measured_links: the links whose measured bandwidth replaced the cluster file's.
        raw: the whole ``chainplan.advice/v1`` document.
    """

    advice_id: int
    model: str
    cluster: str
    goal: str
    dataset_size: int
    scaling: str
    gamma: float
    gamma_source: str
    optimizer: str
    optimizer_state_bytes: int
    notes: tuple[str, ...]
    candidates: tuple[StrategyEstimate, ...]
    solve_ms: float
    raw: dict[str, Any] = field(repr=False, compare=False)
    measured_links: tuple[MeasuredLink, ...] = ()

    @classmethod
    def from_json(cls, doc: dict[str, Any], advice_id: int = 0) -> Advice:
        f = _result(doc, "chainplan.advice/v1", "an advice")
        return cls(advice_id=advice_id, model=f.string("model"), cluster=f.string("cluster"),
                   goal=f.string("goal"), dataset_size=f.integer("dataset_size"),
                   scaling=f.string("scaling"), gamma=f.number("gamma"),
                   gamma_source=f.string("gamma_source"), optimizer=f.string("optimizer"),
                   optimizer_state_bytes=f.integer("optimizer_state_bytes"),
                   notes=tuple(str(n) for n in f.items("notes")),
                   candidates=_candidates(f, StrategyEstimate._read),
                   solve_ms=f.number("solve_ms"), raw=doc,
                   measured_links=MeasuredLink._read_all(f))

    @property
    def feasible(self) -> tuple[StrategyEstimate, ...]:
        """The feasible candidates, best first."""
        return tuple(c for c in self.candidates if c.feasible)

    @property
    def best(self) -> StrategyEstimate | None:
        """The best feasible candidate, or None."""
        return next(iter(self.feasible), None)


@dataclass(frozen=True)
class Stage3D:
    """One pipeline stage of a :class:`Candidate3D`: blocks and layers (1-based,
    inclusive), devices (``devices[d*tmp + t]``), time per micro-batch, memory."""

    first_block: int
    last_block: int
    first_layer: int
    last_layer: int
    first_name: str
    last_name: str
    devices: tuple[int, ...]
    device_type: str
    time_s: float
    recompute_s: float
    in_flight: int
    memory_bytes: int
    capacity_bytes: int
    checkpoint: dict[str, Any] | None

    @classmethod
    def _read(cls, f: Fields) -> Stage3D:
        ck = f.object("checkpoint")
        return cls(first_block=f.integer("first_block"), last_block=f.integer("last_block"),
                   first_layer=f.integer("first_layer"), last_layer=f.integer("last_layer"),
                   first_name=f.string("first_name", ""), last_name=f.string("last_name", ""),
                   devices=tuple(int(d) for d in f.numbers("devices")),
                   device_type=f.string("device_type", ""), time_s=f.number("time_s"),
                   recompute_s=f.number("recompute_s", 0.0), in_flight=f.integer("in_flight"),
                   memory_bytes=f.integer("memory_bytes"),
                   capacity_bytes=f.integer("capacity_bytes"),
                   checkpoint=dict(ck.obj) if ck else None)


@dataclass(frozen=True)
class SimStage3D:
    """What pipesim measured of one stage of a :class:`SimCheck3D`: the most micro-batches
    in flight, the peak bytes of one of its devices, its idle share, and how a checkpointed
    stage recomputed (``rotor``, ``rotor-least``, ``whole``; empty when it did not)."""

    in_flight: int
    peak_bytes: int
    bubble: float
    recompute: str

    @classmethod
    def _read(cls, f: Fields) -> SimStage3D:
        return cls(in_flight=f.integer("in_flight"), peak_bytes=f.integer("peak_bytes"),
                   bubble=f.number("bubble"), recompute=f.string("recompute", ""))


@dataclass(frozen=True)
class SimCheck3D:
    """pipesim's run of a candidate's pipeline (docs/parallel.md, "The pipesim check"):
    one iteration of ``microbatches`` under ``schedule`` with the candidate's stage times.
    ``divergence`` is (simulated − predicted) / predicted pipeline time; ``fits`` is False
    when a stage's simulated peak exceeds its devices' memory."""

    schedule: str
    microbatches: int
    pipeline_time_s: float
    divergence: float
    stages: tuple[SimStage3D, ...]
    fits: bool

    @classmethod
    def _read(cls, f: Fields) -> SimCheck3D:
        return cls(schedule=f.string("schedule"), microbatches=f.integer("microbatches", low=1),
                   pipeline_time_s=f.number("pipeline_time_s"), divergence=f.number("divergence"),
                   stages=tuple(SimStage3D._read(s) for s in f.objects("stages")),
                   fits=f.boolean("fits"))


@dataclass(frozen=True)
class Candidate3D:
    """One strategy of :func:`chainplan.parallel.search3d`: AMP's (pp, dp, tmp, placement, mbs,
    boundaries), priced (Eq. 4) and checked against memory (``fits``); ``simulated`` is
    pipesim's check of its pipeline (None for pp = 1 and for documents without it)."""

    index: int
    rank: int
    pp: int
    dp: int
    tmp: int
    mbs: int
    gas: int
    placement: str
    cut: str
    boundaries: tuple[int, ...]
    stages: tuple[Stage3D, ...]
    iteration_time_s: float
    pipeline_time_s: float
    dp_sync_s: float
    bottleneck_s: float
    p2p_s: float
    fits: bool
    checkpointed: int
    simulated: SimCheck3D | None = None

    @property
    def devices(self) -> int:
        """pp · dp · tmp."""
        return self.pp * self.dp * self.tmp

    def layout(self, rank: int) -> RankLayout:
        """Where process ``rank`` (a device index) works: stage, layers, replica, shard,
        groups (:func:`chainplan.layout3d.rank_layout`)."""
        return rank_layout(self, rank)

    def process_groups(self) -> ProcessGroups:
        """Every tensor, data and pipeline group, in the order every process creates them
        (:func:`chainplan.layout3d.process_groups`)."""
        return process_groups(self)

    @classmethod
    def _read(cls, f: Fields, index: int) -> Candidate3D:
        return cls(index=index, rank=f.integer("rank", 0), pp=f.integer("pp", low=1),
                   dp=f.integer("dp", low=1), tmp=f.integer("tmp", low=1),
                   mbs=f.integer("mbs", low=1), gas=f.integer("gas", low=1),
                   placement=f.string("placement"), cut=f.string("cut"),
                   boundaries=tuple(int(b) for b in f.numbers("boundaries")),
                   stages=tuple(Stage3D._read(s) for s in f.objects("stages")),
                   iteration_time_s=f.number("iteration_time_s"),
                   pipeline_time_s=f.number("pipeline_time_s"), dp_sync_s=f.number("dp_sync_s"),
                   bottleneck_s=f.number("bottleneck_s"), p2p_s=f.number("p2p_s"),
                   fits=f.boolean("fits"), checkpointed=f.integer("checkpointed", 0),
                   simulated=SimCheck3D._read(sim) if (sim := f.object("simulated")) else None)


@dataclass(frozen=True)
class Search3D(StoredResult):
    """What :func:`chainplan.parallel.search3d` returns: the top-K candidates by predicted time per
    iteration, Megatron's pick for comparison, and how the search went.

    Attributes:
        advice_id: where it is stored (0 when not).
        candidates: the best ``top_k``, best first. megatron: Megatron's heuristic's pick.
        enumerated, evaluated, over_capacity, checkpointed, dropped: the search's counts.
        warnings: the candidates whose pipesim check disagrees with the prediction.
        measured_links: the links whose measured bandwidth replaced the cluster file's.
        raw: the whole ``chainplan.search3d/v1`` document (what a training script reads).
    """

    advice_id: int
    model: str
    cluster: str
    devices: int
    global_batch: int
    blocks: int
    enumerated: int
    evaluated: int
    over_capacity: int
    checkpointed: int
    dropped: int
    candidates: tuple[Candidate3D, ...]
    megatron: Candidate3D | None
    notes: tuple[str, ...]
    solve_ms: float
    raw: dict[str, Any] = field(repr=False, compare=False)
    warnings: tuple[str, ...] = ()
    measured_links: tuple[MeasuredLink, ...] = ()

    @classmethod
    def from_json(cls, doc: dict[str, Any], advice_id: int = 0) -> Search3D:
        f = _result(doc, "chainplan.search3d/v1", "a search3d")
        mg = f.object("megatron")
        return cls(advice_id=advice_id, model=f.string("model"), cluster=f.string("cluster"),
                   devices=f.integer("devices"), global_batch=f.integer("global_batch"),
                   blocks=f.integer("blocks"), enumerated=f.integer("enumerated"),
                   evaluated=f.integer("evaluated"), over_capacity=f.integer("over_capacity"),
                   checkpointed=f.integer("checkpointed"), dropped=f.integer("dropped"),
                   candidates=_candidates(f, Candidate3D._read),
                   megatron=Candidate3D._read(mg, -1) if mg else None,
                   notes=tuple(str(n) for n in f.items("notes")), solve_ms=f.number("solve_ms"),
                   raw=doc, warnings=tuple(str(w) for w in f.items("warnings")),
                   measured_links=MeasuredLink._read_all(f))

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> Search3D:
        """Read a result written by ``chainplan search3d -o FILE`` (not stored: advice_id 0).

        Raises:
            PlanError: the file cannot be read or is not a search3d document.
        """
        try:
            doc = json.loads(Path(path).read_text())
        except (OSError, ValueError) as err:
            raise PlanError(f"cannot read the search3d result {str(path)!r}: {err}") from err
        if not isinstance(doc, dict):
            raise PlanError(f"{str(path)!r} is not a search3d document (not a JSON object)")
        return cls.from_json(doc)

    @property
    def best(self) -> Candidate3D | None:
        """The best candidate, or None."""
        return next(iter(self.candidates), None)
