"""Stages cut out of a captured graph, run with the model's own tensors.

A :class:`GraphStage` is an ``nn.Module`` taking one tensor (its stage input) and returning
one (its boundary value), as the executors and the profiler expect of every stage. It runs
its part of the captured graph as an ``fx.GraphModule`` whose other inputs are bound at
each call:

* **parameters and buffers** are looked up in the model by owner module and attribute at
  every call, so they are the model's own tensors (tied weights stay tied, an optimizer
  updates what the stage reads, ``load_state_dict`` and ``.to()`` are seen). They are also
  registered on the stage (the same objects, never copies) so that the profiler and the
  executors find them with ``parameters()`` and ``buffers()``;
* **side values** come from the chain's :class:`~chainplan.runtime.side.SideSlot`;
* **constants** (tensors made inside ``forward``, lifted by export) are held by the stage.

Buffers updated in place (BatchNorm's running statistics and ``num_batches_tracked``) are
updated by the first forward of a step only: during a recomputation
(:meth:`GraphStage.frozen_buffers`, entered by the runner) the stage updates throwaway
copies instead, and its output is the same since a training-mode BatchNorm normalizes with
the batch's statistics.
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Hashable, Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import fx, nn

from chainplan.errors import ScheduleError
from chainplan.graph.aliasing import alias_root, writes
from chainplan.graph.capture import Capture
from chainplan.graph.headform import UNFUSED_HEAD, has_fused_head, unfused
from chainplan.graph.packs import PackMap, record_packs, supported
from chainplan.graph.partial import OptionProgram
from chainplan.runtime import compiled
from chainplan.runtime.side import SideSlot

__all__ = ["GraphStage", "Reader", "mutated_buffers", "readers", "run_graph", "state_of"]


@dataclass(frozen=True)
class Reader:
    """How to fetch one graph input at call time.

    Attributes:
        kind: ``"state"`` (a parameter or buffer of the model), ``"constant"``, ``"side"``
            (a side value, by name) or ``"user"`` (an argument, by flat index).
        key: the placeholder's name (the side value's name, the registration name).
        owner, attr: a weak reference to the module holding a parameter or buffer (the
            chains cached for a model must not keep it alive), and the attribute name.
        value: a constant's tensor.
        flat_index: a user argument's index among the flattened ``(args, kwargs)``.
        parameter: whether a state tensor is a parameter (else a buffer).
    """

    kind: str
    key: str
    owner: weakref.ReferenceType[nn.Module] | None = None
    attr: str = ""
    value: Any = None
    flat_index: int = -1
    parameter: bool = False


def readers(nodes: tuple[fx.Node, ...], cap: Capture, model: nn.Module,
            side: frozenset[fx.Node]) -> list[Reader]:
    """The readers of ``nodes``: placeholders of ``cap``, or side values when in ``side``."""
    out = []
    for n in nodes:
        spec = cap.inputs.get(n)
        if n in side or spec is None:
            out.append(Reader("side", n.name))
        elif spec.kind in ("parameter", "buffer"):
            prefix, _, attr = spec.name.rpartition(".")
            out.append(Reader("state", n.name, weakref.ref(model.get_submodule(prefix)), attr,
                              parameter=spec.kind == "parameter"))
        elif spec.kind == "constant":
            out.append(Reader("constant", n.name, value=spec.value))
        else:
            out.append(Reader("user", n.name, flat_index=spec.flat_index, value=spec.value))
    return out


def run_graph(cap: Capture, nodes: tuple[fx.Node, ...], inputs: list[fx.Node],
              outputs: list[fx.Node]) -> fx.GraphModule:
    """A graph module running ``nodes`` (in order) on ``inputs``; it returns the value of
    ``outputs[0]`` alone when there is one output, else a tuple."""
    graph = fx.Graph()
    env: dict[fx.Node, fx.Node] = {n: graph.placeholder(n.name) for n in inputs}
    for n in nodes:
        env[n] = graph.node_copy(n, lambda a: env[a])
    result = env[outputs[0]] if len(outputs) == 1 else tuple(env[o] for o in outputs)
    graph.output(result)
    # The exported graph module is the root: sub-graphs of higher-order operations (a
    # no_grad or autocast region inside forward) are copied from it by reference.
    return fx.GraphModule(cap.program.graph_module, graph)


class GraphStage(nn.Module):
    """One stage of an extracted chain (module docstring).

    Args:
        gm: the stage's graph module; its inputs are the stage input, then ``reads``.
        reads: how to fetch the other inputs.
        mutated: the registration names of the buffers the stage updates in place.
        slot: the chain's side-value slot.
        name: the stage's name (its module paths).
    """

    def __init__(self, gm: fx.GraphModule, reads: list[Reader], mutated: frozenset[str],
                 slot: SideSlot, name: str) -> None:
        super().__init__()
        self.gm = gm
        self.reads = reads
        self.mutated = mutated
        self.slot = slot
        self.stage_name = name
        self._recomputing = False
        # The saved tensors' nodes (option_program), by whether the input requires a
        # gradient: a stage whose input does not (the chain's first) saves fewer tensors.
        self._packs: dict[Hashable, PackMap] = {}
        self._programs: dict[Hashable, OptionProgram] = {}
        # The stage's other forms (form()), made once; a plain dict: not submodules.
        self._forms: dict[str, GraphStage] = {}
        for r in reads:
            if r.kind == "state":
                t = state_of(r)
                if isinstance(t, nn.Parameter):
                    self.register_parameter(r.key, t)
                else:
                    self.register_buffer(r.key, t, persistent=False)

    def extra_repr(self) -> str:
        return self.stage_name

    def _state(self, r: Reader) -> torch.Tensor:
        t = state_of(r)
        table = self._parameters if r.parameter else self._buffers
        if table.get(r.key) is not t:  # the model's tensor was replaced (e.g. by .to())
            table[r.key] = t  # type: ignore[assignment]
        if self._recomputing and r.key in self.mutated:
            return t.clone()  # a recomputation updates a copy (module docstring)
        return t

    def _side(self, r: Reader) -> torch.Tensor:
        try:
            return self.slot.values[r.key]
        except KeyError:
            raise ScheduleError(
                f"stage {self.stage_name} reads the side value {r.key}, which is not bound: "
                "run the extracted chain through its executor or chainplan.profile, not "
                "stage by stage") from None

    @compiled.entry
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Run the stage's graph module on ``x`` and its other inputs. Under
        ``torch.compile`` the frame compiled is the graph module's own, distinct per stage
        (:mod:`chainplan.runtime.compiled`)."""
        out: torch.Tensor = self.gm(*self.inputs(x))
        return out

    def inputs(self, x: torch.Tensor) -> list[Any]:
        """The values of the graph module's placeholders for the stage input ``x``, in
        order: ``x``, then what :attr:`reads` fetches (copies of updated buffers while
        :meth:`frozen_buffers` is on)."""
        args: list[Any] = [x]
        for r in self.reads:
            if r.kind == "state":
                args.append(self._state(r))
            elif r.kind == "side":
                args.append(self._side(r))
            else:
                args.append(r.value)
        return args

    def pack_map(self, x: torch.Tensor) -> PackMap:
        """Which node of the stage's graph each tensor autograd saves belongs to
        (:mod:`chainplan.graph.packs`), found once by running the stage on ``x`` (the
        random-number streams and buffers left as they were)."""
        key = _packs_key(x)
        got = self._packs.get(key)
        if got is None:
            devices = [x.device] if x.device.type == "cuda" else []
            with torch.random.fork_rng(devices=devices), self.frozen_buffers():
                inp = x.detach().requires_grad_(x.requires_grad)
                got = self._packs[key] = record_packs(self.gm, self.inputs(inp))
        return got

    def option_program(self, keep: tuple[int, ...], x: torch.Tensor) -> OptionProgram:
        """The program of the operation-level option keeping the nodes at ``keep``
        (:mod:`chainplan.graph.partial`), for inputs like ``x`` (:meth:`pack_map`).

        Raises:
            ScheduleError: the stage's graph has no options (an in-place update, a
                sub-module call).
        """
        key = (keep, _packs_key(x))
        got = self._programs.get(key)
        if got is not None:
            return got
        if not supported(self.gm):
            raise ScheduleError(f"stage {self.stage_name} has no operation-level options "
                                "(it updates a value in place or calls a sub-module)")
        program = OptionProgram.build(self.pack_map(x), frozenset(keep))
        self._programs[key] = program
        return program

    @property
    def forms(self) -> tuple[str, ...]:
        """The names of the stage's other forms: ``("unfused_head",)`` for a stage running
        a language model's head fused with its loss (:mod:`chainplan.graph.headform`),
        else none."""
        return (UNFUSED_HEAD,) if has_fused_head(self.gm) else ()

    def form(self, name: str) -> GraphStage:
        """The stage computed in its form ``name`` (:attr:`forms`): a stage of the same
        model's tensors, side values and name, whose graph computes the same function
        another way.

        Raises:
            ScheduleError: the stage has no such form.
        """
        got = self._forms.get(name)
        if got is None:
            if name not in self.forms:
                raise ScheduleError(f"stage {self.stage_name} has no form {name!r} (its forms: "
                                    f"{', '.join(self.forms) or 'none'})")
            got = GraphStage(unfused(self.gm), self.reads, self.mutated, self.slot,
                             self.stage_name)
            self._forms[name] = got
        return got

    @contextlib.contextmanager
    def frozen_buffers(self) -> Iterator[None]:
        """Run a recomputation: buffers updated in place are updated on copies."""
        before = self._recomputing
        self._recomputing = True
        try:
            yield
        finally:
            self._recomputing = before

    def named_buffers(self, prefix: str = "", recurse: bool = True,
                      remove_duplicate: bool = True) -> Iterator[tuple[str, torch.Tensor]]:
        """The buffers the stage reads, and the side values of the step being run.

        Side values are held outside the stage, like buffers: listing them here keeps the
        profiler from counting them in what the stage saves for its backward (they are
        counted once for the whole chain) and the offloading executor from moving them.
        ``state_dict()`` and ``.to()`` do not use this method and never see them.
        """
        yield from super().named_buffers(prefix, recurse, remove_duplicate)
        seen: set[int] = set()
        for r in self.reads:
            v = self.slot.values.get(r.key) if r.kind == "side" else None
            if v is not None and id(v) not in seen:
                seen.add(id(v))
                yield (f"{prefix}.side.{r.key}" if prefix else f"side.{r.key}"), v


def state_of(r: Reader) -> torch.Tensor:
    """The model's current parameter or buffer a ``"state"`` reader stands for.

    Raises:
        ScheduleError: the model is gone.
    """
    owner = r.owner() if r.owner is not None else None
    if owner is None:
        raise ScheduleError(f"the model owning {r.key} no longer exists")
    t: torch.Tensor = getattr(owner, r.attr)
    return t


def mutated_buffers(nodes: tuple[fx.Node, ...], cap: Capture) -> frozenset[str]:
    """The placeholder names of the buffers that ``nodes`` update in place."""
    out = set()
    for n in nodes:
        for w in writes(n):
            root = alias_root(w)
            spec = cap.inputs.get(root)
            if spec is not None and spec.kind == "buffer":
                out.add(root.name)
    return frozenset(out)


def _packs_key(x: torch.Tensor) -> Hashable:
    """What a stage's saved tensors depend on besides its graph: whether the input needs a
    gradient, and the autocast state (dtypes of what autograd saves)."""
    return (x.requires_grad, *[(kind, torch.get_autocast_dtype(kind)) for kind in ("cpu", "cuda")
                               if torch.is_autocast_enabled(kind)])
