"""Cut points of a single-source DAG: the nodes every path from the source to the sink crosses.

The nodes are numbered in a topological order (0 the source, ``n - 1`` the sink) and the
edges go forward. A node ``v`` strictly between the two is on every source→sink path if and
only if no edge jumps over it, that is no edge ``(u, w)`` with ``u < v < w``:

* such an edge gives a path around ``v``: the source reaches ``u`` through nodes numbered at
  most ``u`` and ``w`` reaches the sink through nodes numbered at least ``w``;
* conversely a path that avoids ``v`` goes from below ``v`` to above it, so one of its
  edges jumps over ``v``.

This holds for any topological order, so one sweep over the edges finds every cut point in
O(n + |E|) (a difference array counts the edges covering each position). In graph terms
these are the source-sink articulation points (the dominators of the sink); the chain
extractor cuts a model between consecutive ones. The module never imports torch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["cut_points", "jumps_over"]


def cut_points(n: int, edges: Iterable[tuple[int, int]]) -> list[int]:
    """Return the nodes strictly between the source ``0`` and the sink ``n - 1`` that every
    source→sink path crosses, in increasing order.

    Args:
        n: the number of nodes, numbered in a topological order; only nodes on some
            source→sink path should be given (others make no difference to the paths but
            their edges count as jumps).
        edges: ``(u, w)`` pairs with ``u < w``.

    Raises:
        ValueError: an edge goes backward or leaves ``0..n-1``.

    The time complexity is O(n + |E|).
    """
    cover = [0] * (n + 1)
    for u, w in edges:
        if not 0 <= u < w < n:
            raise ValueError(f"edge ({u}, {w}) is not a forward edge of nodes 0..{n - 1}")
        if w - u > 1:
            cover[u + 1] += 1  # positions u+1 .. w-1 are jumped over
            cover[w] -= 1
    cuts: list[int] = []
    covered = 0
    for v in range(1, n - 1):
        covered += cover[v]
        if covered == 0:
            cuts.append(v)
    return cuts


def jumps_over(lo: int, hi: int, edges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Return the edges that jump over some position strictly between ``lo`` and ``hi``
    while staying within ``[lo, hi]``: the branches that keep that region in one piece,
    longest first.

    Args:
        lo, hi: the region's bounds (consecutive cut points, typically).
        edges: ``(u, w)`` pairs with ``u < w``.
    """
    inside = [(u, w) for u, w in edges if lo <= u and w <= hi and w - u > 1]
    return sorted(inside, key=lambda e: (e[0] - e[1], e[0]))
