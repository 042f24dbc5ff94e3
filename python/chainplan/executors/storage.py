"""The device/host mechanics of offloading: copy streams, and storages emptied and refilled.

What moves is a device *storage*. An offload copies its bytes to the host (on the CUDA copy
stream, into pinned memory, then records an event; the storage is marked as used by the copy
stream with ``record_stream``); at its release point the storage is resized to 0 bytes,
which frees the memory for every tensor sharing it: the runner's reference, autograd's saved
references, the detached input of the next recorded forward. The caching allocator hands the
memory out again only once the copy is done (O.7: an offload releases its memory when it
completes). A prefetch resizes the storage back (allocated on the copy stream) and copies
the bytes in, in place, then records an event; the compute stream waits on it before the
tensor is read.

Resizing rather than dropping references is what frees an a_ℓ that the next ``F_all ℓ+1``
saved for its backward (a convolution or BatchNorm saves its input): the chain model counts
a_ℓ once, and so does the executor.

On the CPU the same code runs with host copies: an offload clones the bytes into a separate
CPU tensor and the release resizes the original storage to 0; a prefetch resizes it back and
copies the bytes in. This is how the tests check correctness, and that the storages are
really emptied.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["Block", "Group", "Holder", "Link", "Record", "movable", "storage_key"]


def storage_key(t: torch.Tensor) -> int:
    """The address of ``t``'s storage: tensors sharing a storage share the key."""
    return int(t.untyped_storage().data_ptr())


def movable(t: torch.Tensor, device: torch.device) -> bool:
    """Whether the storage of ``t`` can be emptied and refilled: on ``device``, not empty,
    resizable."""
    s = t.untyped_storage()
    return t.device == device and s.nbytes() > 0 and s.resizable()


class Link:
    """Copies between the device and the host: a CUDA copy stream, or CPU clones."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.stream = (torch.cuda.Stream(device)  # type: ignore[no-untyped-call]
                       if device.type == "cuda" else None)

    def _event(self) -> Any:
        assert self.stream is not None
        event = torch.cuda.Event()  # type: ignore[no-untyped-call]
        event.record(self.stream)
        return event

    def to_host(self, t: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Start copying ``t`` to the host; the caller may drop ``t`` at once."""
        if self.stream is None:
            return t.clone(), None
        host = torch.empty_like(t, device="cpu", pin_memory=True)
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            host.copy_(t, non_blocking=True)
            event = self._event()
        t.record_stream(self.stream)  # its memory is reused only once the copy is done
        return host, event

    def to_device(self, host: torch.Tensor) -> tuple[torch.Tensor, Any]:
        """Start copying ``host`` back; :meth:`wait` before reading the result."""
        if self.stream is None:
            return host.clone(), None
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            dev = torch.empty_like(host, device=self.device)
            dev.copy_(host, non_blocking=True)
            event = self._event()
        return dev, event

    def refill(self, storage: torch.UntypedStorage, nbytes: int, host: torch.Tensor) -> Any:
        """Start giving a storage resized to 0 its ``nbytes`` back, copied from ``host``."""
        if self.stream is None:
            storage.resize_(nbytes)
            torch.empty(0, dtype=torch.uint8).set_(storage).copy_(host)
            return None
        self.stream.wait_stream(torch.cuda.current_stream(self.device))
        with torch.cuda.stream(self.stream):
            storage.resize_(nbytes)  # allocated on the copy stream
            view = torch.empty(0, dtype=torch.uint8, device=self.device).set_(storage)
            view.copy_(host, non_blocking=True)
            event = self._event()
        return event

    def wait(self, dev: torch.Tensor, event: Any) -> None:
        """Make the current stream wait for a prefetch of ``dev``."""
        if event is not None:
            stream = torch.cuda.current_stream(self.device)
            stream.wait_event(event)
            dev.record_stream(stream)


class Block:
    """One device storage that a transfer moves.

    An offload copies its bytes to the host; the release resizes the storage to 0 bytes,
    which frees the memory for every tensor sharing it (autograd's saved references and
    the detached input of the next recorded forward included). A prefetch resizes it back
    and copies the bytes in, in place, so every one of those tensors sees the data again.
    """

    __slots__ = ("storage", "nbytes", "host", "event", "released")

    def __init__(self, t: torch.Tensor) -> None:
        self.storage = t.untyped_storage()
        self.nbytes = self.storage.nbytes()
        self.host: torch.Tensor | None = None
        self.event: Any = None
        self.released = False

    def _bytes(self) -> torch.Tensor:
        return torch.empty(0, dtype=torch.uint8, device=self.storage.device).set_(self.storage)

    def offload(self, link: Link) -> None:
        """Start copying the storage's bytes to the host."""
        self.host, _ = link.to_host(self._bytes())

    def release(self) -> None:
        """Free the device memory (resize to 0), once its bytes have a host copy."""
        if self.host is not None and not self.released:
            self.storage.resize_(0)
            self.released = True

    def prefetch(self, link: Link) -> None:
        """Start bringing the bytes back, if the memory was released."""
        if self.released:
            assert self.host is not None
            self.event = link.refill(self.storage, self.nbytes, self.host)
            self.released = False
        self.host = None

    def wait(self, link: Link) -> None:
        """Make the compute stream wait until the bytes are back."""
        if self.released:  # never prefetched: the plan's checks exclude it, copy now
            self.prefetch(link)
        if self.event is not None:
            link.wait(self._bytes(), self.event)
            self.event = None


class Holder:
    """One tensor saved by autograd in a hooked ``F_all``, and the block that moves it."""

    __slots__ = ("tensor", "block")

    def __init__(self, t: torch.Tensor) -> None:
        # Detached: a holder referencing an output would make a reference cycle through
        # its grad_fn. The detached tensor shares the storage, which is what moves.
        self.tensor = t.detach()
        self.block: Block | None = None

    def get(self, link: Link) -> torch.Tensor:
        """The saved tensor, once its prefetch (if any) has landed."""
        if self.block is not None:
            self.block.wait(link)
        return self.tensor


class Group:
    """The saved tensors of one hooked ``F_all ℓ`` (its ā_ℓ), grouped by storage."""

    def __init__(self) -> None:
        self.holders: list[Holder] = []
        self.blocks: dict[int, Block] = {}
        self.out: Block | None = None  # the output a_ℓ, moved with ā_ℓ when ℓ < L

    def pack(self, t: torch.Tensor) -> Holder:
        """The pack hook: hold a tensor autograd saves."""
        h = Holder(t)
        self.holders.append(h)
        return h

    def finish(self, out: torch.Tensor, kept: set[int], move_out: bool,
               device: torch.device) -> None:
        """Assign blocks once the forward is done: every saved storage but the ``kept`` ones
        (input, parameters, buffers) and, unless ``move_out`` is false, the output's."""
        out_key = storage_key(out)
        if move_out and movable(out, device):
            self.out = self.blocks[out_key] = Block(out)
        else:
            kept = kept | {out_key}
        for h in self.holders:
            key = storage_key(h.tensor)
            if key in kept or not movable(h.tensor, device):
                continue
            if key not in self.blocks:
                self.blocks[key] = Block(h.tensor)
            h.block = self.blocks[key]


class Record:
    """What one offload moved: blocks, or (for a0 and a_L, which the caller also holds) a
    host copy of the tensor, the runner dropping its reference."""

    def __init__(self, blocks: list[Block], out: Block | None = None,
                 host: torch.Tensor | None = None) -> None:
        self.blocks = blocks
        self.out = out  # the block of a_ℓ itself, released only if nothing else shares it
        self.external = host is not None
        self.host = host  # the copy of a0 or a_L
