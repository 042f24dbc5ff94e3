"""Allocated-bytes probes on the CPU and on CUDA devices.

A :class:`MemoryProbe` reports, for the region of code it encloses, the peak of allocated tensor
memory above the level at entry and the net change between entry and exit. These are the two
quantities the rotor profiling recipe needs (``specs/rotor.md`` §1.4 and §7 item 25), on every
device chainplan profiles.

**CUDA** devices use the caching allocator's own counters: ``torch.cuda.memory_allocated``,
``max_memory_allocated`` and ``reset_peak_memory_stats``. They are exact (block sizes as the
allocator rounds them, 512 bytes at least), cost nothing, and count every allocation on the
device whichever thread makes it, autograd's device threads included. Nested probes keep their
own maxima, so an inner probe's reset does not lose an outer probe's peak; other code that
resets the device's peak statistics while a probe is open does.

**CPU** has no allocator counter, so the probe records the CPU allocator's allocation and free
events with PyTorch's profiler (``profile_memory``) and replays them in order after the region.
Choice made after comparing three approaches on known cases (4 MiB allocated and freed, then
1 MiB; Linear, Conv2d+BatchNorm2d+ReLU and TransformerEncoderLayer forward and backward):

* the profiler's allocator events (chosen) see every storage the CPU allocator hands out,
  including temporaries that kernels allocate and free internally. These are exactly the
  overheads ``o_F``/``o_B`` measure: the oneDNN convolution allocates and frees about 1.5 MiB
  of reorder buffers in a forward whose output is 1 MiB, and ``native_batch_norm_backward``
  1 MiB of scratch for a 1 MiB activation; ``torch.cuda.max_memory_allocated`` would see
  such temporaries too;
* a ``TorchDispatchMode`` tracking live storages (weak references with finalizers on
  ``untyped_storage()``) matched the profiler byte for byte on op outputs but sees only those:
  on the convolution block its backward peak was 1 MiB low, and it misses storages made
  outside the dispatcher; ``torch.distributed``'s ``MemTracker`` has the same blind spots.

While any probe is open, Python's cyclic garbage collector is paused (:mod:`gcpause`): a
collection inside the region would free older garbage and lower its peak and delta by chance.

The CPU probe's limits, all documented behaviour of the profiler:

* **Frees of storages allocated before the outermost open probe on the thread began are not
  reliably reported.** PyTorch's CPU allocator learns a block's size only when the block is
  allocated while a memory profiler runs: a free of a block it does not know is dropped (it
  logs "Memory block of unknown size was allocated before the profiling started"), so the
  probe's level does not fall and its peak is over-estimated by what was freed; a free of a
  block whose address an earlier probe recorded is reported with the recorded size. Open one
  outer probe around everything whose frees matter, for instance around a forward and its
  backward, as the stage measurement does (saved activations are allocated by the forward
  and freed by the backward), and release older tensors before it opens.
* Only the thread that opens the probe and the threads that inherit its profiler state are
  recorded: autograd's engine threads are; a separate ``threading.Thread`` or an OpenMP worker
  allocating on its own is not.
* Memory that bypasses PyTorch's CPU allocator (numpy arrays, Python objects, a library's own
  ``malloc``) is not counted.
* Results are computed when the outermost probe on the thread exits; a nested probe's values
  can be read only then. Another profiler must not be running on the thread.
* Overhead: about 10 us per operator call, nested calls included (200 small Linear layers,
  forward and backward: 12 ms without a probe, 100 ms with one; shared 2-core CPU), plus
  about 100 us per outermost probe. Use probes on measurement runs, never on timed runs.

Usage::

    with MemoryProbe(device="cpu") as whole:
        with MemoryProbe(device="cpu") as fwd:
            out = module(x)
        out.backward(torch.randn_like(out))
    print(fwd.peak_bytes, fwd.delta_bytes, whole.peak_bytes)
"""

from __future__ import annotations

import itertools
import threading
from types import TracebackType

import torch
from torch._C import _autograd

from chainplan.errors import ProfileError
from chainplan.profiler import gcpause
from chainplan.profiler.allocevents import MARK_PREFIX, AllocRecorder

__all__ = ["MemoryProbe"]

# What a marker says of its probe (after MARK_PREFIX and the probe's token).
_ENTER, _RESET, _EXIT = "enter", "reset", "exit"

_tokens = itertools.count(1)


class _CpuSession:
    """One profiler recording shared by the nested probes open on one thread."""

    def __init__(self, recorder: AllocRecorder) -> None:
        self.recorder = recorder
        self.probes: dict[int, MemoryProbe] = {}
        self.depth = 0

    def mark(self, token: int, what: str) -> None:
        self.recorder.mark(f"{MARK_PREFIX}{token}:{what}")

    def finish(self) -> None:
        """Stops recording and hands every probe of the session its result."""
        try:
            items = self.recorder.stop()
        except RuntimeError as err:  # e.g. someone else stopped the profiler meanwhile
            for probe in self.probes.values():
                probe._error = f"the profiler failed ({err})"
            return
        # Replay: running total of bytes allocated since recording began, and per open probe
        # [level at entry, highest level since entry or since its last reset].
        total = 0
        open_probes: dict[int, list[int]] = {}
        for item in items:
            if isinstance(item, int):
                total += item
                for state in open_probes.values():
                    if total > state[1]:
                        state[1] = total
                continue
            token_text, _, what = item[len(MARK_PREFIX) :].partition(":")
            token = int(token_text)
            if what == _ENTER:
                open_probes[token] = [total, total]
            elif what == _RESET and token in open_probes:
                open_probes[token][1] = total
            elif what == _EXIT and token in open_probes:
                base, peak = open_probes.pop(token)
                owner = self.probes.get(token)
                if owner is not None:
                    owner._set_result(peak - base, total - base)
        for probe in self.probes.values():
            if probe._result is None:
                probe._error = "its markers were not found in the profiler's events"


class _CpuState(threading.local):
    session: _CpuSession | None = None


_cpu_state = _CpuState()

# CUDA probes open per device index, to keep nested peaks apart (see MemoryProbe.__enter__).
_cuda_lock = threading.Lock()
_cuda_open: dict[int, list[MemoryProbe]] = {}


def _fold_cuda_peak(index: int) -> None:
    """Gives every open probe on device ``index`` the device's peak so far. Hold _cuda_lock."""
    peak = int(torch.cuda.max_memory_allocated(index))
    for probe in _cuda_open.get(index, []):
        if peak > probe._peak_abs:
            probe._peak_abs = peak


class MemoryProbe:
    """Measures allocated tensor memory over a region: its peak and its net change.

    ``peak_bytes`` is the highest level of allocated memory inside the region minus the level
    at entry (0 when memory never rose above the entry level); ``delta_bytes`` is the level at
    exit minus the level at entry (negative when the region freed more than it kept). See the
    module documentation for how each device is measured and for the CPU probe's accuracy
    limits.

    Keyword Args:
        device: the device whose memory is measured: ``"cpu"`` or a CUDA device (default:
            ``"cpu"``). ``"cuda"`` without an index means the current CUDA device.

    Raises:
        ProfileError: the device is neither the CPU nor an available CUDA device (on
            construction); the probe is entered twice, or another profiler is already running
            on this thread (on ``__enter__``); a result is read before it is available.

    Example::

        with MemoryProbe(device="cuda") as probe:
            y = layer(x)
        print(probe.peak_bytes, probe.delta_bytes)

    .. note::
        A probe is single-use and not reentrant. Probes nest: on the CPU the inner probes'
        results become available when the outermost probe of the thread exits.
    """

    def __init__(self, *, device: torch.device | str = "cpu") -> None:
        try:
            dev = torch.device(device)
        except RuntimeError as err:
            raise ProfileError(f"unknown device ({device!r})") from err
        if dev.type == "cuda":
            if not torch.cuda.is_available():
                raise ProfileError(f"CUDA is not available (device: {dev})")
            index = dev.index if dev.index is not None else torch.cuda.current_device()
            dev = torch.device("cuda", index)
        elif dev.type != "cpu":
            raise ProfileError(f"memory probes support the CPU and CUDA devices (device: {dev})")
        self._device = dev
        self._token = next(_tokens)
        self._entered = False
        self._exited = False
        self._result: tuple[int, int] | None = None
        self._error: str | None = None
        # CUDA bookkeeping: allocated bytes at entry and highest allocated bytes seen.
        self._base = 0
        self._peak_abs = 0

    @property
    def device(self) -> torch.device:
        """The device this probe measures."""
        return self._device

    @property
    def peak_bytes(self) -> int:
        """Peak allocated bytes in the region above the level at entry (bytes, ≥ 0)."""
        return max(0, self._get_result()[0])

    @property
    def delta_bytes(self) -> int:
        """Allocated bytes at exit minus allocated bytes at entry (bytes, may be negative)."""
        return self._get_result()[1]

    def _get_result(self) -> tuple[int, int]:
        if self._result is not None:
            return self._result
        if self._error is not None:
            raise ProfileError(f"memory probe on {self._device} has no result: {self._error}")
        if not self._exited:
            raise ProfileError("memory probe results are available after its region exits")
        raise ProfileError(
            "CPU memory probe results are available after the outermost probe on the thread "
            "exits"
        )

    def _set_result(self, peak: int, delta: int) -> None:
        self._result = (peak, delta)

    def reset_peak(self) -> None:
        """Restarts the peak at the current level, as ``torch.cuda.reset_peak_memory_stats`` does.

        After a reset, ``peak_bytes`` is the highest level reached since the reset, still
        measured from the level at entry (and still at least 0).

        Raises:
            ProfileError: the probe is not open.
        """
        if not self._entered or self._exited:
            raise ProfileError("reset_peak() needs an open memory probe")
        if self._device.type == "cuda":
            index = self._index()
            with _cuda_lock:
                _fold_cuda_peak(index)
                torch.cuda.reset_peak_memory_stats(index)
                self._peak_abs = int(torch.cuda.memory_allocated(index))
            return
        session = _cpu_state.session
        if session is not None:
            session.mark(self._token, _RESET)

    def __enter__(self) -> MemoryProbe:
        if self._entered:
            raise ProfileError("a MemoryProbe is single-use; create a new one per region")
        gcpause.pause()  # resumed in __exit__, and below if entering fails
        if self._device.type == "cuda":
            index = self._index()
            with _cuda_lock:
                # Fold the peak into the outer probes before resetting it for this one.
                _fold_cuda_peak(index)
                torch.cuda.reset_peak_memory_stats(index)
                self._base = int(torch.cuda.memory_allocated(index))
                self._peak_abs = self._base
                _cuda_open.setdefault(index, []).append(self)
        else:
            session = _cpu_state.session
            if session is None:
                if _autograd._profiler_enabled():
                    gcpause.resume()
                    raise ProfileError(
                        "a CPU memory probe needs the PyTorch profiler, which is already "
                        "running on this thread (close it around the probe)"
                    )
                session = _CpuSession(AllocRecorder())
                try:
                    session.recorder.start()
                except RuntimeError as err:
                    gcpause.resume()
                    raise ProfileError(f"cannot start the CPU memory profiler: {err}") from err
                _cpu_state.session = session
            session.probes[self._token] = self
            session.depth += 1
            session.mark(self._token, _ENTER)
        self._entered = True
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._exited = True
        gcpause.resume()
        if self._device.type == "cuda":
            index = self._index()
            with _cuda_lock:
                _fold_cuda_peak(index)
                end = int(torch.cuda.memory_allocated(index))
                _cuda_open[index].remove(self)
            self._set_result(self._peak_abs - self._base, end - self._base)
            return
        session = _cpu_state.session
        if session is None:  # pragma: no cover - only if the thread state was tampered with
            self._error = "its profiler session disappeared"
            return
        session.mark(self._token, _EXIT)
        session.depth -= 1
        if session.depth == 0:
            _cpu_state.session = None
            session.finish()

    def _index(self) -> int:
        index = self._device.index
        assert index is not None  # normalized in __init__
        return index

    def __repr__(self) -> str:
        if self._result is None:
            return f"MemoryProbe(device={self._device}, pending)"
        return (
            f"MemoryProbe(device={self._device}, peak_bytes={self.peak_bytes}, "
            f"delta_bytes={self.delta_bytes})"
        )
