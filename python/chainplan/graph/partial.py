"""Running an operation-level option of a captured stage.

An option keeps, from the stage's first forward, the values of some nodes of its graph and
what their operations saved (:mod:`chainplan.graph.options`); the rest of what the backward
reads is recomputed right before the backward. :class:`OptionProgram` is that option made
executable from the stage's :class:`~chainplan.graph.packs.PackMap`:

* ``mask`` says, for each tensor autograd saves in the stage's forward (by its order),
  whether the forward keeps it: a view of a kept node's value, of the stage input, of a
  parameter, buffer or side value, or of the stage's output, or a tensor of a kept node's
  own; the others are dropped (:func:`chainplan.runtime.saved.dropping`);
* :meth:`OptionProgram.run` recomputes, right before the backward, only the nodes that
  produce what was dropped, from the stage input, the kept values (rebuilt from the saved
  views of them) and the stage's other inputs: a node whose own tensors were dropped runs
  with gradients recorded and its arguments requiring gradients as in the first forward,
  so that autograd saves the same tensors, which fill their holders; a dropped view of a
  value is rebuilt from the recomputed value (same storage layout, same view). Nothing
  else runs: a kept matrix product is not recomputed, as it would be by rerunning the
  stage.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import fx
from torch.utils import _pytree as pytree

from chainplan.errors import ScheduleError
from chainplan.graph.packs import PackMap, call
from chainplan.runtime.saved import StageSaves, refill

__all__ = ["OptionProgram"]


@dataclass(frozen=True)
class OptionProgram:
    """An option of a stage, ready to run (module docstring).

    Attributes:
        packs: the stage's pack map.
        keep: the positions of the nodes the option keeps.
        mask: per pack, whether the first forward keeps it.
        order: the positions of the nodes the recomputation runs, in order.
        capture: among them, those rerun to save their own tensors again.
        fills: per node position, the dropped packs viewing its value.
    """

    packs: PackMap
    keep: frozenset[int]
    mask: tuple[bool, ...]
    order: tuple[int, ...]
    capture: frozenset[int]
    fills: dict[int, tuple[int, ...]]

    @classmethod
    def build(cls, pm: PackMap, keep: frozenset[int]) -> OptionProgram:
        """The program of the option keeping the nodes at ``keep``."""
        sources = {i for i, n in enumerate(pm.nodes) if n.op == "placeholder"}
        kept_roots = set(keep) | sources | {pm.root.get(pm.output, pm.output)}
        mask = tuple((p.alias >= 0 and p.alias in kept_roots) or (p.alias < 0 and p.owner in keep)
                     for p in pm.packs)
        # What a kept saved view makes available: the node owning that storage.
        available = set(sources)
        for p, m in zip(pm.packs, mask, strict=True):
            if m and p.alias >= 0 and p.alias in pm.views and pm.views[p.alias][3] == p.dtype:
                available.add(p.alias)
        needed: set[int] = set()
        capture: set[int] = set()
        fills: dict[int, list[int]] = {}
        for i, (p, m) in enumerate(zip(pm.packs, mask, strict=True)):
            if m:
                continue
            if p.alias >= 0:
                needed.add(p.alias)
                fills.setdefault(p.alias, []).append(i)
            else:
                needed.add(p.owner)
                capture.add(p.owner)
        pos = {n: i for i, n in enumerate(pm.nodes)}
        run = _closure(pm, pos, needed, available)
        # Random numbers: the recomputation replays the RNG state the stage's first forward
        # started with, so the random operations it runs must draw in the same order as
        # there: every random operation before the last one it reruns runs too (a dropout
        # whose value was kept only advances the stream).
        drawn = [i for i in run if _random(pm.nodes[i])]
        if drawn:
            earlier = {i for i, n in enumerate(pm.nodes) if i < max(drawn) and _random(n)}
            run |= _closure(pm, pos, earlier - run, available, forced=earlier)
        return cls(pm, frozenset(keep), mask, tuple(sorted(run)), frozenset(capture),
                   {k: tuple(v) for k, v in fills.items()})

    def run(self, args: list[Any], saves: StageSaves) -> None:
        """Fill ``saves``' dropped tensors: ``args`` are the graph module's placeholder
        values for this step (the stage input first), ``saves.kept`` the tensors the first
        forward kept, by pack index.

        Raises:
            ScheduleError: a recomputed tensor differs in shape or dtype from the first
                forward's, or one stays missing.
        """
        pm = self.packs
        env: dict[fx.Node, Any] = {}
        placeholders = iter(args)
        for n in pm.nodes:
            if n.op != "placeholder":
                break
            env[n] = next(placeholders)
        for i, t in saves.kept.items():  # kept values, rebuilt from their saved views
            p = pm.packs[i]
            if p.alias < 0 or pm.nodes[p.alias] in env or p.alias not in pm.views:
                continue
            size, stride, offset, dtype = pm.views[p.alias]
            if t.dtype == dtype:
                env[pm.nodes[p.alias]] = torch.as_strided(t, size, stride, offset)
        for i in self.order:
            n = pm.nodes[i]
            a = fx.node.map_arg(n.args, env.__getitem__)
            kw = fx.node.map_arg(n.kwargs, env.__getitem__)
            if i in self.capture:
                val = self._capture(i, a, kw, saves)
            else:
                with torch.no_grad():
                    val = call(n, a, kw)
            env[n] = val
            for k in self.fills.get(i, ()):
                self._fill(k, val, saves)

    def _capture(self, i: int, a: Any, kw: Any, saves: StageSaves) -> Any:
        """Run node ``i`` as in the first forward, its own saved tensors into their holders."""
        pm = self.packs
        flags = iter(pm.grads.get(i, ()))

        def prepare(t: Any) -> Any:
            if not isinstance(t, torch.Tensor):
                return t
            want = next(flags, False)
            t = t.detach()
            grad = want and (t.is_floating_point() or t.is_complex())
            return t.requires_grad_(True) if grad else t

        a, kw = pytree.tree_map(prepare, (a, kw))
        owned = iter(pm.owned.get(i, ()))

        def pack(t: torch.Tensor) -> Any:
            k = next(owned, None)
            if k is None:
                raise ScheduleError(f"the recomputation of stage {saves.stage} saved more "
                                    f"tensors for node {pm.nodes[i].name} than its first forward")
            if pm.packs[k].alias < 0:
                refill(saves, k, t)
            return None

        with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda p: p):
            val = call(pm.nodes[i], a, kw)
        return pytree.tree_map(lambda t: t.detach() if isinstance(t, torch.Tensor) else t, val)

    def _fill(self, k: int, value: Any, saves: StageSaves) -> None:
        """Rebuild the dropped pack ``k``, a view of ``value``'s storage."""
        p = self.packs.packs[k]
        if not isinstance(value, torch.Tensor):
            raise ScheduleError(f"stage {saves.stage}: a saved tensor views a value that is "
                                "not a tensor")
        refill(saves, k, torch.as_strided(value.detach(), p.size, p.stride, p.offset))


def _random(n: fx.Node) -> bool:
    """Whether node ``n`` draws random numbers (a dropout, ``rand``, ``bernoulli``, ...)."""
    if n.op != "call_function":
        return False
    tags = getattr(n.target, "tags", None)
    if tags is not None:
        return torch.Tag.nondeterministic_seeded in tags
    return n.is_impure(impure_random=True) and not n.is_impure(impure_random=False)


def _closure(pm: PackMap, pos: dict[fx.Node, int], needed: set[int], available: set[int],
             forced: set[int] = frozenset()) -> set[int]:  # type: ignore[assignment]
    """The nodes to run to compute ``needed`` (and ``forced``, even when available) from
    the ``available`` ones."""
    run: set[int] = set()
    todo = sorted(needed)
    while todo:
        i = todo.pop()
        if i in run or (i in available and i not in forced):
            continue
        run.add(i)
        for u in pm.nodes[i].all_input_nodes:
            j = pos[u]
            if j not in run and j not in available:
                todo.append(j)
    return run
