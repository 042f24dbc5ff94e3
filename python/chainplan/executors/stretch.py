"""Consecutive store-all stages compiled as one region, under ``torch.compile``.

Compiled stage by stage (:mod:`chainplan.runtime.compiled`), a plan pays for each stage
what ``torch.compile(model)`` pays once per step: Dynamo's guards, AOTAutograd's runtime
wrappers around the stage's forward and backward (one autograd node per compiled region)
and a boundary the compiler cannot fuse across (the residual addition that ends a stage and
the layer norm that starts the next). On a launch-bound step (a small GPT on a GPU) that is
most of the step.

Between some stages of the forward phase the executor has nothing to do: a **stretch** is a
run of consecutive stages that the plan runs ``F_all`` without an operation-level option,
that it never runs forward again (no RNG state to keep, no graph to fill), whose
recomputations come after the stretch's last backward (only the last stage may have
operations to run before its backward: the pre-hook goes on the stretch's output) and whose
activations have no reader past the next stage. Under ``torch.compile`` the executor runs a
stretch of two or more stages as one graph module calling the stages in order
(:class:`Stretch`), so one compiled region: a plan that recomputes nothing is then compiled
as the model is by ``torch.compile(model)``, and the store-all part of any other plan
compiles in one piece.

Eager execution runs stretches too, as **straight-line programs**: the stages' graphs
copied one after the other into one graph module (``inline``), so a stretch is one Python
call of generated code, without the executor's bookkeeping, the stages' ``nn.Module``
calls and their graph modules' own calls in between. On a launch-bound step (3-16 ms on a
GPU) that per-stage Python was the overhead of a plan that recomputes nothing over the
plain step (issue 36); such a plan is now one stretch, one call. The operations are the
stages' own, in the same order: the gradients are bit-identical. A stretch whose stages
are not all cut from a captured graph (a declared ``nn.Sequential``'s), or whose graphs
hold a tensor attribute (it would not follow the model's ``.to()``), calls the stages'
graph modules in order instead.

The region's graph module is generated per stretch (its own code object), so Dynamo
compiles each stretch once, however many stretches or stages there are.

**Inputs go in a box.** A plan drops a stretch's input a_{first-1} after the first stage
wherever that stage's backward does not read it (a batch norm or ReLU saves its output,
not its input). A region called as ``module(x, ...)`` would hold it to its end through
every frame on the way (the caller's variable, the call's argument tuple, ``nn.Module``'s
``__call__``): 2.3 % over its budget on a flattened CNN's smallest plan. So the region
takes one list, empties it before its first operation, and the generated code lets go of
each value after its last use (``torch.fx`` does): once the first stage has read a_{first-1},
only what autograd saved of it remains. The caller hands over its references
(:meth:`Stretch.__call__`). Under ``torch.compile`` Dynamo replays the list's emptying after
the compiled region returns, so there the input lives to the region's end (a compiled
stage's memory is AOTAutograd's, which the plan's profile did not measure either).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter, getitem
from typing import Any

import torch
from torch import fx, nn

from chainplan.executors.program import Program
from chainplan.graph.stage import GraphStage
from chainplan.runtime import compiled

__all__ = ["Stretch", "stretches"]


class Stretch:
    """Stages ``first..last`` of a chain run as one graph module (module docstring).

    A stage cut from a captured graph enters as its graph module, its other inputs
    (parameters, buffers, side values, constants) fetched at each call as the stage does
    (:meth:`GraphStage.inputs`) and passed as inputs of the region; any other stage enters
    as the module it is.

    Args:
        stages: the chain's stages ``first..last``, in order (two or more).
        first: the index of the first (1-based).
        inline: copy the stages' graphs into one straight-line graph where they allow it
            (module docstring); else the region calls each stage's graph module.
        outputs: the stages whose outputs the region returns, a tuple of them in this order
            when there are several (a recomputation that keeps a checkpoint on its way:
            :mod:`chainplan.executors.regions`); by default a_last alone, as a tensor.

    Attributes:
        inlined: whether the stretch runs as one straight-line graph.
    """

    def __init__(self, stages: Sequence[nn.Module], first: int, inline: bool = False,
                 outputs: Sequence[int] = ()) -> None:
        self.first = first
        self.last = first + len(stages) - 1
        self.stages = list(stages)
        self.outputs = tuple(outputs) or (self.last,)
        if any(not first <= k <= self.last for k in self.outputs):
            raise ValueError(f"outputs {self.outputs} are not all among stages "
                             f"{first}-{self.last}")
        picks = [k - first for k in self.outputs]
        name = f"Stages{first}to{self.last}"
        flat = _straight_line(self.stages, picks) if inline else None
        self.inlined = flat is not None
        if flat is not None:
            self.module = fx.GraphModule(flat[0], flat[1], class_name=name)
            return
        root = nn.Module()
        graph = fx.Graph()
        x, *rest = _unbox(graph, [len(s.reads) if isinstance(s, GraphStage) else 0
                                  for s in self.stages])
        outs: list[fx.Node] = []
        for k, stage in enumerate(self.stages, start=first):
            name = f"stage{k}"
            if isinstance(stage, GraphStage):
                root.add_module(name, stage.gm)
                x = graph.call_module(name, (x, *rest.pop(0)))
            else:
                rest.pop(0)
                root.add_module(name, stage)
                x = graph.call_module(name, (x,))
            outs.append(x)
        graph.output(_result(outs, picks))
        self.module = fx.GraphModule(root, graph, class_name=name)

    def __call__(self, callback: Any, box: list[torch.Tensor]) -> Any:
        """Run the stretch on its input a_{first-1}, handed over as the one item of ``box``
        (module docstring: the call empties it, and the caller keeps no other reference
        it means to let go of); return a_last (or the ``outputs``)."""
        if len(box) != 1:
            raise ValueError(f"a stretch takes its input as a one-item list (got {len(box)})")
        x = box[0]
        for stage in self.stages:
            if isinstance(stage, GraphStage):
                box.extend(stage.inputs(x)[1:])
        del x
        return compiled.stage_call(callback, self.module, box)


def _unbox(graph: fx.Graph, reads: list[int]) -> tuple[Any, ...]:
    """The region's one placeholder, a list, unpacked and emptied (module docstring): the
    node of ``x``, then per stage the list of the nodes of its other inputs (``reads[k]``
    of them), in :meth:`Stretch.__call__`'s order."""
    box = graph.placeholder("inputs")
    flat = [graph.call_function(getitem, (box, j)) for j in range(1 + sum(reads))]
    graph.call_method("clear", (box,))
    out: list[Any] = [flat[0]]
    at = 1
    for n in reads:
        out.append(flat[at:at + n])
        at += n
    return tuple(out)


def _result(outs: list[Any], picks: list[int]) -> Any:
    """What the region's graph returns: the picked stages' outputs, one or a tuple."""
    return outs[picks[0]] if len(picks) == 1 else tuple(outs[j] for j in picks)


def _straight_line(stages: list[nn.Module],
                   picks: list[int]) -> tuple[dict[str, Any], fx.Graph] | None:
    """The stages' graphs copied one after the other into one graph (its attributes and
    the graph) returning the outputs of the stages at positions ``picks``, taking the box
    :meth:`Stretch.__call__` passes (:func:`_unbox`); None where the stretch cannot be
    inlined (module docstring)."""
    graph_stages = [s for s in stages if isinstance(s, GraphStage)]
    if len(graph_stages) != len(stages):
        return None
    graph = fx.Graph()
    x, *rest = _unbox(graph, [len(s.reads) for s in graph_stages])
    attrs: dict[str, Any] = {}
    outs: list[Any] = []
    for stage, ins in zip(graph_stages, rest, strict=True):
        gm: fx.GraphModule = stage.gm
        nodes = list(gm.graph.nodes)
        env = dict(zip([n for n in nodes if n.op == "placeholder"], [x, *ins], strict=True))
        for n in nodes:
            if n.op == "placeholder":
                continue
            if n.op == "output":
                x = fx.map_arg(n.args[0], env.__getitem__)
                break
            if n.op in ("get_attr", "call_module"):
                value = attrgetter(n.target)(gm)
                if isinstance(value, torch.Tensor) or attrs.get(str(n.target), value) is not value:
                    return None
                attrs[str(n.target)] = value
            env[n] = graph.node_copy(n, env.__getitem__)
        if not isinstance(x, fx.Node):  # a stage returns one tensor
            return None
        outs.append(x)
    graph.output(_result(outs, picks))
    return attrs, graph


def stretches(program: Program, stages: Sequence[nn.Module],
              inline: bool = False) -> dict[int, Stretch]:
    """The stretches of ``program``'s forward phase (module docstring), by first stage.

    Args:
        program: the plan's program.
        stages: the chain's stages, in order.
        inline: run them as straight-line graphs where they allow it (eager execution).
    """
    drops_at: dict[int, int] = {}  # stage -> where the executor drops its forward-phase copy
    for i in sorted(program.drops):
        for k in program.drops[i]:
            drops_at.setdefault(k, i)
    out: dict[int, Stretch] = {}
    run: list[int] = []  # stages of the current stretch

    def close() -> None:
        if len(run) >= 2:
            out[run[0]] = Stretch([stages[k - 1] for k in run], run[0], inline)
        run.clear()

    for j, (i, op) in enumerate(program.forward):
        k = op.stage
        if op.kind != "F_all" or op.option or k in program.recomputed:
            close()
            continue
        run.append(k)
        # The stretch ends at a stage whose backward needs work first (its pre-hook goes on
        # the region's output) or whose activation is read past the next stage.
        nxt = program.forward[j + 1][0] if j + 1 < len(program.forward) else i
        if k in program.groups or drops_at.get(k, nxt) > nxt:
            close()
    close()
    return out
