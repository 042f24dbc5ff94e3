"""How a stage cut from a captured graph is named and described (:class:`StageInfo` of
:mod:`chainplan.graph.describe`, the torch-free description ``chainplan.stages`` prints)."""

from __future__ import annotations

from torch import fx

from chainplan.graph.analysis import ChainGraph, is_view, nbytes
from chainplan.graph.describe import StageInfo
from chainplan.graph.partition import Part

__all__ = ["stage_info"]


def stage_info(index: int, part: Part, g: ChainGraph, reads: tuple[str, ...]) -> StageInfo:
    """Describe stage ``index`` (its part of the graph ``g``).

    The stage is named after the outermost module calls it runs whole: the deepest ones
    that still cover its operations, so that a stage cut from a model wrapping its layers
    in one module (``model.layers`` inside ``LlamaForCausalLM.model``) is named
    ``model.layers.3:LlamaDecoderLayer``, not ``model (part)``. Operations of the model's
    own ``forward`` are named by their operation (``cat``, ``add``); operations of a
    module the stage does not run whole (a residual addition of a block split across
    stages) are listed as ``path (part)`` among the modules, and name the stage only when
    nothing else does. Side computations the stage makes itself (a position embedding)
    count as its own.
    """
    def counted(n: fx.Node) -> bool:
        return n.op == "call_function" and not is_view(n)

    count: dict[str, int] = {}
    for n in g.pos:
        if counted(n):
            for key, _, _ in g.stacks[n]:
                count[key] = count.get(key, 0) + 1
    mine: dict[str, int] = {}
    for n in part.nodes:
        if counted(n):
            for key, _, _ in g.stacks[n]:
                mine[key] = mine.get(key, 0) + 1
    own = set(part.path)
    labels: list[str] = []  # whole module calls and the model's own operations, in order
    whole: dict[str, tuple[str, str]] = {}  # call key -> (path, type)
    partial: list[str] = []
    for n in part.nodes:
        if not counted(n):
            continue
        stack = g.stacks[n]
        call = next(((key, path, kind) for key, path, kind in stack
                     if mine.get(key) == count[key]), None)
        if call is not None:
            whole.setdefault(call[0], (call[1], call[2]))
            label = call[1]
        elif stack:
            label = ""
            if f"{stack[-1][1]} (part)" not in partial:
                partial.append(f"{stack[-1][1]} (part)")
        elif n in own:  # an operation of the model's own forward on the chain's path
            label = str(getattr(n.target, "_opname", n.name))
        else:
            label = ""
        if label and label not in labels:
            labels.append(label)
    modules = tuple(dict.fromkeys([path for path, _ in whole.values()] + partial))
    if len(whole) == 1 and len(labels) == 1 and not partial:
        path, kind = next(iter(whole.values()))
        name = f"{path}:{kind}"
    else:
        shown = labels or partial or [part.output.name]
        name = "+".join(shown) if len(shown) <= 4 else f"{shown[0]}+...+{shown[-1]}"
    val = part.output.meta["val"]
    inputs = g.capture.inputs
    params = [n for n in part.reads if n in inputs and inputs[n].kind == "parameter"]
    return StageInfo(index, name, modules,
                     sum(1 for n in part.path if n.op == "call_function" and not is_view(n)),
                     tuple(int(d) for d in val.shape), str(val.dtype), nbytes(part.output),
                     sum(nbytes(p) for p in params), reads)
