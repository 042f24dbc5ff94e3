"""Reading a PipeDream layer profile (graph.txt): nodes, edges and their order.

One line per node or edge:

    nodeN -- <module> -- forward_compute_time=<ms>, backward_compute_time=<ms>,
             activation_size=<bytes>, parameter_size=<bytes>
    nodeA -- nodeB            (nodeB consumes nodeA's output)

:func:`parse` reads them (refusing modules with several outputs, non-finite or negative
numbers, duplicate nodes and edges to unknown nodes), :func:`topo_order` orders the nodes
(Kahn's algorithm, ties broken by node number, so the result is deterministic) and
:func:`ancestors` finds what an output depends on. ``pipedream2chain.py`` turns the result
into a chain. Standard library only.
"""

import heapq
import math
import re

ALIAS_OPS = {"View", "Size"}  # no new tensor storage

NODE_RE = re.compile(
    r"^\s*(node\d+) -- (.*) -- forward_compute_time=([0-9.eE+-]+), "
    r"backward_compute_time=([0-9.eE+-]+), activation_size=([0-9.eE+-]+), "
    r"parameter_size=([0-9.eE+-]+)\s*$"
)
EDGE_RE = re.compile(r"^\s*(node\d+) -- (node\d+)\s*$")

class ConversionError(Exception):
    """The profile cannot be read or converted; the message says where."""


class Node:
    __slots__ = ("id", "num", "desc", "op", "fwd_ms", "bwd_ms", "act", "params")

    def __init__(self, nid, desc, fwd, bwd, act, params):
        self.id = nid
        self.num = int(nid[4:])
        self.desc = desc
        m = re.match(r"[A-Za-z_0-9]+", desc)
        self.op = m.group(0) if m else desc
        self.fwd_ms = fwd
        self.bwd_ms = bwd
        self.act = act
        self.params = params

    @property
    def inplace(self):
        return "inplace" in self.desc

    @property
    def allocates(self):
        """Whether the node's output is new storage (counted in saved_bytes)."""
        return not self.inplace and self.op not in ALIAS_OPS


def parse(path):
    nodes, edges = {}, []
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            m = EDGE_RE.match(line)
            if m:
                edges.append((m.group(1), m.group(2)))
                continue
            m = NODE_RE.match(line)
            if not m and "activation_size=[" in line:
                raise ConversionError(
                    f"{path}:{lineno}: a module with several outputs "
                    f"({line.split(' -- ')[1][:40]}): not supported, the "
                    "converter handles single-input image models"
                )
            if not m:
                raise ConversionError(f"{path}:{lineno}: unrecognized line: {line.strip()[:80]}")
            nid, desc = m.group(1), m.group(2)
            vals = [float(m.group(i)) for i in range(3, 7)]
            for v, what in zip(
                vals,
                (
                    "forward_compute_time",
                    "backward_compute_time",
                    "activation_size",
                    "parameter_size",
                ),
                strict=True,
            ):
                if not math.isfinite(v) or v < 0:
                    raise ConversionError(
                        f"{path}:{lineno}: {what} must be finite and >= 0, got {v}"
                    )
            if nid in nodes:
                raise ConversionError(f"{path}:{lineno}: duplicate node {nid}")
            nodes[nid] = Node(nid, desc, *vals)
    for a, b in edges:
        for n in (a, b):
            if n not in nodes:
                raise ConversionError(f"{path}: edge {a} -- {b} names unknown node {n}")
    return nodes, edges


def topo_order(nodes, succ, pred):
    indeg = {n: len(pred[n]) for n in nodes}
    heap = [(nodes[n].num, n) for n in nodes if indeg[n] == 0]
    heapq.heapify(heap)
    order = []
    while heap:
        _, n = heapq.heappop(heap)
        order.append(n)
        for s in succ[n]:
            indeg[s] -= 1
            if indeg[s] == 0:
                heapq.heappush(heap, (nodes[s].num, s))
    if len(order) != len(nodes):
        raise ConversionError("the graph has a cycle")
    return order


def ancestors(target, pred):
    seen = {target}
    stack = [target]
    while stack:
        n = stack.pop()
        for p in pred[n]:
            if p not in seen:
                seen.add(p)
                stack.append(p)
    return seen
