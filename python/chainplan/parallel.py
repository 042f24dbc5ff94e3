"""Past one device: :func:`advise` (ParaDL's strategy ranking) and :func:`search3d` (AMP's
3-D search with a memory filter), in-process through the Go planners.

Usage::

    import chainplan
    prof = chainplan.profile(model, sample, loss_fn=loss_fn, target=y, optimizer=torch.optim.Adam)
    adv = chainplan.parallel.advise(prof, "examples/clusters/abci.yaml", dataset_size=1_281_167,
                                    batch_per_device=64, devices=[4, 16, 64, 256, 1024])
    print(adv.best.strategy, adv.best.devices, adv.best.epoch_time_s)
    s3 = chainplan.parallel.search3d(prof, "examples/clusters/amp-het-cluster.yaml",
                                     global_batch=32, device_speed={"T4-16GB": 0.35})
    for stage in s3.best.stages:
        print(stage.first_name, stage.last_name, stage.devices)

Both go through the service the CLI uses (``chainplan advise``, ``chainplan search3d``); a
stored profile's result is recorded (``advice_id``) so that measured runs can be added and
compared (:meth:`~chainplan.advice.Advice.record`, :meth:`~chainplan.advice.Advice.accuracy`).
This module never imports torch.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from chainplan import _bind
from chainplan.advice import Advice, Search3D
from chainplan.arguments import bandwidth, typed
from chainplan.errors import ArgumentTypeError, NotFoundError, PlanError
from chainplan.profiler.document import Profile
from chainplan.source import envelope, run_id_of

__all__ = ["Advice", "Search3D", "advise", "record_link", "search3d"]

LINKS = ("intra", "inter", "host")

ClusterArg = str | os.PathLike[str] | Mapping[str, Any]



def _cluster_text(cluster: ClusterArg) -> str:
    """The cluster description's text: a file (YAML or JSON), or a mapping written as JSON."""
    if isinstance(cluster, Mapping):
        return json.dumps(dict(cluster))
    if not isinstance(cluster, (str, os.PathLike)):
        raise ArgumentTypeError("cluster must be a cluster file (YAML or JSON) or a mapping "
                                f"(got {typed(cluster)})")
    path = Path(cluster)
    try:
        return path.read_text()
    except FileNotFoundError as err:
        raise NotFoundError(f"cluster file {str(cluster)!r} does not exist "
                            "(examples/clusters/ has examples)") from err
    except (OSError, UnicodeDecodeError) as err:
        raise PlanError(f"cannot read the cluster file {str(cluster)!r}: {err}") from err


def _batch(batch: int | None) -> int:
    """The batch a chain was measured at, 0 when not given: Go asks for it when the source
    is a chain (a profile records its own)."""
    return 0 if batch is None else _check_int("batch", batch, low=1)


def _check_int(name: str, value: object, *, low: int = 0) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ArgumentTypeError(f"{name} must be an integer (got {typed(value)})")
    if value < low:
        raise PlanError(f"{name} must be ≥ {low} (got {value})")
    return value


def advise(
    source: Profile | int | str | os.PathLike[str],
    cluster: ClusterArg,
    *,
    dataset_size: int,
    global_batch: int | None = None,
    batch_per_device: int | None = None,
    strategies: Sequence[str] | None = None,
    devices: Sequence[int] | None = None,
    goal: str = "time",
    gamma: float | None = None,
    optimizer: str = "auto",
    checkpointing: bool = False,
    offloading: bool = False,
    segments: int = 0,
    slots: int = 0,
    batch: int | None = None,
    dtype_bytes: int = 4,
    nominal_links: bool = False,
) -> Advice:
    """Rank parallel training strategies with ParaDL's model (docs/parallel.md).

    Args:
        source: a :class:`~chainplan.profiler.run.Profile`, a stored run id, a profile file
            (``.arrow``), or a chain file (then ``batch`` is required).
        cluster: a cluster description file (YAML or JSON) or a mapping of its fields.

    Keyword Args:
        dataset_size: samples per epoch, D.
        global_batch: B for every device count (strong scaling); or
        batch_per_device: b, with B = b·p (weak scaling). Give exactly one.
        strategies: names to evaluate (default: all that the profile supports).
        devices: device counts (default: 1, 2, 4, ... up to the cluster's size).
        goal: ``"time"`` (epoch time, default), ``"cost"`` (devices × time) or ``"memory"``.
        gamma: memory reuse factor γ (default: calibrated from the profile).
        optimizer: state counted in memory: ``"auto"`` (profiled, else Adam's), ``"adam"``,
            ``"momentum"``, ``"sgd"`` or ``"none"``.
        checkpointing: add ``data+checkpointing`` (rotor when data parallelism does not fit).
        offloading: add ``data+offloading`` (pofo; the cluster must give ``host_bw``).
        segments: pipeline micro-batches S (0: min(4p, B)). slots: rotor/pofo slots (0: default).
        batch: the batch a chain file was measured at. dtype_bytes: its element size (4).
        nominal_links: plan on the cluster file's bandwidths even where the store holds
            measured ones for the stored run (:func:`record_link`); by default they replace
            the file's and ``Advice.measured_links`` lists them.

    Returns:
        The :class:`~chainplan.advice.Advice`, candidates ranked (feasible first).

    Raises:
        InfeasibleBudget: no candidate fits (``min_budget_bytes``: the least memory per
            device any needs).
        PlanError: a bad option, a bad cluster file (the field named), a strategy named
            in ``strategies`` that needs a profile field the source lacks, or a stored
            measured bandwidth that is not positive and finite (its row named).
        NotFoundError: no such run or file.
    """
    req: dict[str, Any] = {"dataset_size": _check_int("dataset_size", dataset_size, low=1),
                           "goal": goal, "optimizer": optimizer, "checkpoint": checkpointing,
                           "offload": offloading, "segments": _check_int("segments", segments),
                           "slots": _check_int("slots", slots)}
    if (global_batch is None) == (batch_per_device is None):
        raise PlanError("give global_batch (strong scaling) or batch_per_device (weak scaling)")
    if global_batch is not None:
        req["global_batch"] = _check_int("global_batch", global_batch, low=1)
    if batch_per_device is not None:
        req["batch_per_device"] = _check_int("batch_per_device", batch_per_device, low=1)
    if strategies is not None:
        if isinstance(strategies, str):
            raise ArgumentTypeError("strategies must be a list of names such as ['data', 'df'] "
                                    f"(got {typed(strategies)})")
        req["strategies"] = [str(s) for s in strategies]
    if devices is not None:
        req["devices"] = [_check_int("devices", p, low=1) for p in devices]
    if gamma is not None:
        if isinstance(gamma, bool) or not isinstance(gamma, (int, float)) or not gamma > 0:
            raise PlanError(f"gamma must be a positive number, or None to calibrate "
                            f"(got {gamma!r})")
        req["gamma"] = float(gamma)
    doc = json.loads(_bind.advise(envelope(source, "advise"), _cluster_text(cluster), req,
                                  batch=_batch(batch),
                                  dtype_bytes=_check_int("dtype_bytes", dtype_bytes, low=1),
                                  nominal_links=_flag("nominal_links", nominal_links)))
    return Advice.from_json(doc["advice"], advice_id=int(doc["advice_id"]))


def search3d(
    source: Profile | int | str | os.PathLike[str],
    cluster: ClusterArg,
    *,
    global_batch: int,
    tmp_max: int = 0,
    schedule: str = "1f1b",
    memory_check: str = "rotor",
    cut: str = "amp",
    top_k: int = 10,
    blocks: int = 0,
    device_speed: Mapping[str, float] | None = None,
    optimizer: str = "auto",
    slots: int = 0,
    batch: int | None = None,
    dtype_bytes: int = 4,
    calibration: str | os.PathLike[str] | Mapping[str, Any] | None = None,
    nominal_links: bool = False,
) -> Search3D:
    """Search pipeline, data and tensor degrees, micro-batch and cuts, AMP's way, with a
    memory filter (docs/parallel.md).

    Args:
        source, cluster: as for :func:`advise`.

    Keyword Args:
        global_batch: samples per iteration, gbs.
        tmp_max: the largest tensor degree (0: the smallest node's devices).
        schedule: ``"1f1b"`` (default) or ``"gpipe"``: micro-batches in flight per stage.
        memory_check: ``"rotor"`` (checkpoint a stage over capacity, default), ``"drop"``, or
            ``"off"`` (keep every candidate, AMP's; ``Candidate3D.fits`` says which fit).
        cut: ``"amp"`` (the exact DP, default), ``"madpipe"`` (memory-aware contiguous) or
            ``"best"``.
        top_k: candidates returned (-1: all). blocks: coarsen into this many (0: 64).
        device_speed: each device type's speed relative to the profiled device, e.g.
            ``{"T4-16GB": 0.35}`` (default 1).
        optimizer, slots, batch, dtype_bytes: as for :func:`advise`.
        calibration: a calibration fitted to measured runs on this cluster
            (``chainplan advice calibrate -o FILE``): the file's path, or its document as
            a mapping; predictions are then scaled and given its per-iteration overhead.
        nominal_links: as for :func:`advise`.

    Returns:
        The :class:`~chainplan.advice.Search3D`, candidates best first; each with pp > 1
        carries pipesim's check of its pipeline (``Candidate3D.simulated``), and
        ``Search3D.warnings`` names those whose simulation disagrees with the prediction.

    Raises:
        InfeasibleBudget: no candidate fits the devices' memory.
        PlanError: a bad option or cluster file (the field named).
    """
    if top_k == 0:
        raise PlanError("top_k must be ≥ 1, or -1 for every candidate (got 0)")
    req: dict[str, Any] = {"global_batch": _check_int("global_batch", global_batch, low=1),
                           "tmp_max": _check_int("tmp_max", tmp_max), "schedule": schedule,
                           "memory_check": memory_check, "cut": cut,
                           "top_k": _check_int("top_k", top_k, low=-1),
                           "blocks": _check_int("blocks", blocks), "optimizer": optimizer,
                           "slots": _check_int("slots", slots)}
    if device_speed is not None:
        if not isinstance(device_speed, Mapping):
            raise ArgumentTypeError("device_speed must map device types to relative speeds "
                                    f"(got {typed(device_speed)})")
        req["device_speed"] = {str(k): float(v) for k, v in device_speed.items()}
    if calibration is not None:
        req["calibration"] = (dict(calibration) if isinstance(calibration, Mapping)
                              else json.loads(Path(calibration).read_text()))
    doc = json.loads(_bind.search3d(envelope(source, "search3d"), _cluster_text(cluster), req,
                                    batch=_batch(batch),
                                    dtype_bytes=_check_int("dtype_bytes", dtype_bytes, low=1),
                                    nominal_links=_flag("nominal_links", nominal_links)))
    return Search3D.from_json(doc["result"], advice_id=int(doc["advice_id"]))


def record_link(source: Profile | int, link: str, bytes_per_s: float | str, *,
                device: str | None = None, method: str = "") -> float:
    """Store a link bandwidth measured on the machine a stored run was profiled on, which
    :func:`advise` and :func:`search3d` then use for that run in place of the cluster
    file's (docs/distributed.md, "Measured stage times and bandwidths").

    Args:
        source: the stored run (a stored Profile, or its run id).
        link: ``"intra"`` (between two devices of one node), ``"inter"`` (between nodes) or
            ``"host"`` (device-host copies).
        bytes_per_s: what was measured: bytes per second, or a string such as ``"12GB/s"``.

    Keyword Args:
        device: the cluster's device type the link joins (a cluster file's ``gpu``); the
            run's device (``"cpu"``, ``"cuda:0"``) when None, which a cluster of one device
            type matches (a ``"cpu"`` row only a type named for the CPU, such as
            ``"CPU-thread"``: docs/distributed.md, "Matching").
        method: how it was measured (free text, stored).

    Returns:
        The bandwidth stored, bytes per second.

    Raises:
        PlanError: not a stored run, an unknown link, a bandwidth not positive and finite.
        NotFoundError: no such run.
    """
    run_id = run_id_of(source, "record_link()")
    if run_id is None:
        raise PlanError("record_link() needs a stored run (a stored Profile or a run id) to "
                        f"record the bandwidth with (got {typed(source)})")
    if link not in LINKS:
        raise PlanError(f"link must be one of {', '.join(LINKS)} (got {link!r})")
    bps = bandwidth(bytes_per_s)
    dev = str(_bind.run(run_id)["device"]) if device is None else str(device)
    return _bind.record_bandwidth(run_id, bps, dev, str(method), link=link)


def _flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ArgumentTypeError(f"{name} must be True or False (got {typed(value)})")
    return value
