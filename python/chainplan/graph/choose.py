"""Choosing which cut candidates become stage boundaries.

Every cut candidate could end a stage, but a chain of single operations is not useful: each
stage costs an autograd node and Python bookkeeping per step, the planners' tables grow with
the square of the stage count, and a boundary inside a LayerNorm offers no checkpoint worth
having. The rule, in two steps:

1. **Module boundaries first.** Candidates are taken level by level (the level of a cut is
   the number of modules around it that go on after it, :mod:`chainplan.graph.analysis`):
   the boundaries between the blocks the model's forward calls in turn (level 0) are used
   alone when they give at least ``min_stages`` stages (default 4), else level 1 is added
   (the boundaries inside those blocks, e.g. between a Transformer block's attention and
   its MLP, or between the layers of a model wrapped in one ``encoder`` module), and so on.
   The children of a nested ``nn.Sequential`` or of a ``ModuleList`` looped over, called
   one after the other, are boundaries at the level of the module that calls them.
2. **Residual streams cut one level deeper.** Inside the blocks of the chosen level, the
   cut candidates one level down that are a residual addition (an addition of two values
   that both depend on the chain input: the stream and a branch's output), such as the
   ``x = x + attn(ln1(x))`` between the attention and the MLP of a pre-norm transformer
   block, become boundaries too. Every path crosses them, so the chain keeps its meaning;
   the planner gains a checkpoint at the middle of each block, where a whole-block stage
   would recompute both halves, and a stage boundary costs the executor next to nothing
   (docs/executors.md). ``residual=False`` keeps the blocks whole.
3. **Tiny stages merged.** A stage with at most three operations that make memory (views do
   not count) and under 1 % of the model's parameter bytes (a dropout, an activation, a
   pooling, adding a position table) is merged with a neighbour; of its two boundaries
   the one holding the larger activation goes, so the checkpoints that remain are the
   cheap ones (ties merge into the previous stage; the first stage can only merge forward,
   the last only backward).
"""

from __future__ import annotations

from collections.abc import Sequence

from torch import fx

from chainplan.graph.analysis import ChainGraph, is_view, nbytes

__all__ = ["MIN_STAGES", "choose_boundaries"]

#: The fewest stages the level rule aims for.
MIN_STAGES = 4
#: A stage is tiny with at most this many memory-making operations...
TINY_OPS = 3
#: ... and under this share of the model's parameter bytes.
TINY_PARAMS = 0.01


def choose_boundaries(g: ChainGraph, min_stages: int = MIN_STAGES, *,
                      residual: bool = True) -> tuple[list[int], int]:
    """Return the stage boundaries (indices into ``g.path``, increasing, the output's
    last) and the level they were taken at (module docstring)."""
    total = sum(nbytes(p) for p in set().union(*g.params.values())) if g.params else 0
    levels = sorted(set(g.level.values()))
    chosen: list[int] = [g.cuts[-1]]
    level = 0
    for lv in levels:  # the level from module boundaries alone (step 1)
        cuts = [i for i in g.cuts if g.level[i] <= lv or i == g.cuts[-1]]
        chosen, level = _merge_tiny(g, cuts, total), lv
        if len(chosen) >= min_stages:
            break
    if residual:  # then the residual additions inside its blocks (step 2)
        # Not before choosing the level: a model wrapping its layers in one module
        # (LlamaForCausalLM.model) has its layers' last additions one level down, which
        # would reach min_stages at the wrapper's level and leave the layers whole, the
        # embedding merged into the first.
        cuts = [i for i in g.cuts if g.level[i] <= level or i == g.cuts[-1]]
        cuts = sorted(set(cuts) | {i for i in g.cuts if g.level[i] == level + 1
                                   and _residual(g, i)})
        chosen = _merge_tiny(g, cuts, total)
    return chosen, level


def _residual(g: ChainGraph, i: int) -> bool:
    """Whether cut candidate ``i`` is a residual addition: an addition of two values that
    both depend on the chain input."""
    n = g.path[i]
    name = str(getattr(n.target, "__name__", n.target))
    if n.op != "call_function" or not name.startswith(("add", "iadd")):
        return False
    args = [a for a in n.args[:2] if isinstance(a, fx.Node)]
    return len(args) == 2 and all(a in g.main for a in args)


def _ops(g: ChainGraph, lo: int, hi: int) -> int:
    return sum(1 for n in g.path[lo + 1:hi + 1] if n.op == "call_function" and not is_view(n))


def _params(g: ChainGraph, lo: int, hi: int) -> int:
    seen: set[fx.Node] = set()
    for n in g.path[lo + 1:hi + 1]:
        seen |= g.params[n]
    return sum(nbytes(p) for p in seen)


def _merge_tiny(g: ChainGraph, cuts: Sequence[int], total_params: int) -> list[int]:
    """Merge tiny stages into a neighbour until none is left (or one stage remains)."""
    bounds = list(cuts)
    while len(bounds) > 1:
        starts = [0, *bounds[:-1]]
        tiny = next((j for j, (lo, hi) in enumerate(zip(starts, bounds, strict=True))
                     if _ops(g, lo, hi) <= TINY_OPS
                     and _params(g, lo, hi) < TINY_PARAMS * max(total_params, 1)), None)
        if tiny is None:
            break
        if tiny == 0:
            del bounds[0]  # the first stage merges forward: a_0 stays its input
        elif tiny == len(bounds) - 1:
            del bounds[tiny - 1]  # the last stage merges backward: the output stays
        else:
            before, after = g.path[bounds[tiny - 1]], g.path[bounds[tiny]]
            del bounds[tiny if nbytes(after) > nbytes(before) else tiny - 1]
    return bounds
