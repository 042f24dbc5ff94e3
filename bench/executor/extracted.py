"""Models as written (issue 11): what graph capture and splitting add to ``profile()``, and
what an extracted chain costs per training step next to the same GPT declared as an
``nn.Sequential``.

The GPT is the promise benchmark's (an 8192-word head, width 128, 4 blocks, sequence 64,
batch 8), written twice: as nanoGPT writes it (blocks in a ModuleList, the causal mask an
argument, tied embeddings; ``tests/graph/models.py``) and as a chain of stages
(``tests/models.py``). Run from the repository root after ``make bind``:

    CHAINPLAN_DB=/tmp/bench.db .venv/bin/python bench/executor/extracted.py

Everything runs on the CPU with one thread. Figures are medians over repeated runs.
"""

from __future__ import annotations

import copy
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "bench.db"))

import chainplan  # noqa: E402
from chainplan.graph.chain import extract  # noqa: E402
from tests.graph.models import GPT  # noqa: E402
from tests.models import Block, Embed, Head  # noqa: E402

VOCAB, WIDTH, BLOCKS, SEQ, BATCH = 8192, 128, 4, 64, 8


def _timed(fn: Callable[[], object]) -> tuple[float, float]:
    """Wall and CPU seconds of one call (CPU time is steadier on a shared machine)."""
    w, c = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w, time.process_time() - c


def capture_cost(model: nn.Module, idx: torch.Tensor, mask: torch.Tensor,
                 y: torch.Tensor) -> None:
    """Capture and split against the measuring itself (a cached split makes profile() time
    the measurement alone)."""
    first = _timed(lambda: extract(nn.Linear(2, 2), (torch.randn(1, 2),), {}))
    splits = []
    for _ in range(5):
        fresh = copy.deepcopy(model).train()  # a new model: no cached split
        splits.append(_timed(lambda m=fresh: extract(m, (idx,), {"mask": mask})))
    split = tuple(statistics.median(t[i] for t in splits) for i in range(2))
    profs = []
    for _ in range(3):
        profs.append(_timed(lambda: chainplan.profile(
            fresh, idx, mask=mask, loss_fn=F.cross_entropy, target=y, progress=False,
            spread_warning=None)))  # the split is cached: the measuring alone
    prof = tuple(statistics.median(t[i] for t in profs) for i in range(2))
    stages = len(extract(fresh, (idx,), {"mask": mask}).stages)
    print(f"## Capture and split, GPT as written ({stages} stages)\n")
    print("| what | wall s | CPU s |")
    print("|---|---|---|")
    print(f"| first capture in the process (imports torch.export's machinery) | "
          f"{first[0]:.2f} | {first[1]:.2f} |")
    print(f"| capture + split of the GPT (median of 5) | {split[0]:.3f} | {split[1]:.3f} |")
    print(f"| profile(), measuring only (repeats=5, warmup=2; median of 3) | {prof[0]:.2f} | "
          f"{prof[1]:.2f} |")
    print(f"\ncapture + split add {100 * split[0] / prof[0]:.1f} % (wall), "
          f"{100 * split[1] / prof[1]:.1f} % (CPU) to profile()'s time; the first capture in "
          f"a process adds {first[0]:.1f} s of imports once\n")


def per_step(net: nn.Module, args: tuple[torch.Tensor, ...], kwargs: dict[str, torch.Tensor],
             y: torch.Tensor, reps: int = 7) -> float:
    """Median CPU seconds of a training step (forward, loss, backward)."""

    def step() -> None:
        F.cross_entropy(net(*args, **kwargs), y).backward()

    step()
    return statistics.median(_timed(step)[1] for _ in range(reps))


def step_costs(graph: nn.Module, seq: nn.Sequential, idx: torch.Tensor, mask: torch.Tensor,
               y: torch.Tensor) -> None:
    """Step time of the plain model, store-all and the smallest rotor plan, both ways."""
    rows = []
    for label, model, kwargs in (("as written (graph)", graph, {"mask": mask}),
                                 ("nn.Sequential", seq, {})):
        prof = chainplan.profile(model, idx, loss_fn=F.cross_entropy, target=y, repeats=3,
                                 warmup=1, progress=False, spread_warning=None, **kwargs)
        t0 = time.perf_counter()
        smallest = chainplan.plan(prof, budget="min")
        plan_s = time.perf_counter() - t0
        store_all = chainplan.plan(prof, budget="min", algo="store-all")
        plain = per_step(model, (idx,), kwargs, y)
        wrapped = per_step(store_all.wrap(model), (idx,), kwargs, y)
        rotor = per_step(smallest.wrap(model), (idx,), kwargs, y)
        rows.append((label, prof.num_stages, plan_s, plain, wrapped, rotor))
    print("## Per step (CPU ms), GPT as written against the same GPT as an nn.Sequential\n")
    print("| model | stages | plan(min) s | plain | store-all | overhead | rotor, smallest |")
    print("|---|---|---|---|---|---|---|")
    for label, n, plan_s, plain, wrapped, rotor in rows:
        print(f"| {label} | {n} | {plan_s:.3f} | {plain * 1e3:.1f} | {wrapped * 1e3:.1f} | "
              f"{(wrapped - plain) * 1e3:+.1f} | {rotor * 1e3:.1f} |")


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, CPU, 1 thread\n")
    mask = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()
    idx = torch.randint(0, VOCAB, (BATCH, SEQ))
    y = torch.randint(0, VOCAB, (BATCH * SEQ,))
    graph = GPT(vocab=VOCAB, width=WIDTH, blocks=BLOCKS, seq=SEQ)
    print(f"# GPT: vocabulary {VOCAB}, width {WIDTH}, {BLOCKS} blocks, sequence {SEQ}, "
          f"batch {BATCH}\n")
    capture_cost(graph, idx, mask, y)
    seq = nn.Sequential(Embed(VOCAB, WIDTH, SEQ), *[Block(WIDTH, 4) for _ in range(BLOCKS)],
                        Head(WIDTH, VOCAB))
    step_costs(graph, seq, idx, mask, y)
    # Capture costs per operation, measuring per FLOP: the share falls as the model grows.
    wide, long = 4 * WIDTH, 2 * SEQ
    print(f"\n# GPT: vocabulary {VOCAB}, width {wide}, {BLOCKS} blocks, sequence {long}, "
          f"batch {BATCH}\n")
    big_mask = torch.ones(long, long, dtype=torch.bool).tril()
    capture_cost(GPT(vocab=VOCAB, width=wide, blocks=BLOCKS, seq=long),
                 torch.randint(0, VOCAB, (BATCH, long)), big_mask,
                 torch.randint(0, VOCAB, (BATCH * long,)))


if __name__ == "__main__":
    main()
