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


def median_time(fn: Callable[[], object], reps: int) -> float:
    fn()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def capture_cost(model: nn.Module, idx: torch.Tensor, mask: torch.Tensor,
                 y: torch.Tensor) -> None:
    """Capture and split against the measuring itself (a cached split makes profile() time
    the measurement alone)."""
    t0 = time.perf_counter()
    extract(nn.Linear(2, 2), (torch.randn(1, 2),), {})
    first = time.perf_counter() - t0
    splits = []
    for _ in range(3):
        fresh = copy.deepcopy(model).train()  # a new model: no cached split
        t0 = time.perf_counter()
        extract(fresh, (idx,), {"mask": mask})
        splits.append(time.perf_counter() - t0)
    split = statistics.median(splits)
    prof = chainplan.profile(fresh, idx, mask=mask, loss_fn=F.cross_entropy, target=y,
                             progress=False, spread_warning=None)  # the split is cached
    end_to_end = chainplan.profile(copy.deepcopy(model), idx, mask=mask,
                                   loss_fn=F.cross_entropy, target=y, progress=False,
                                   spread_warning=None)
    print(f"## Capture and split, GPT as written ({prof.num_stages} stages)\n")
    print("| what | seconds |")
    print("|---|---|")
    print(f"| first capture in the process (imports torch.export's machinery) | {first:.2f} |")
    print(f"| capture + split of the GPT (median of 3) | {split:.3f} |")
    print(f"| profile(), measuring only (repeats=5, warmup=2) | {prof.seconds:.2f} |")
    print(f"| profile() of a fresh copy, capture included | {end_to_end.seconds:.2f} |")
    print(f"\ncapture + split add {100 * split / prof.seconds:.1f} % to profile()'s time "
          f"(the first capture in a process adds {first:.1f} s of imports once)\n")


def step_costs(graph: nn.Module, seq: nn.Sequential, idx: torch.Tensor, mask: torch.Tensor,
               y: torch.Tensor) -> None:
    """Step time of the plain model, store-all and the smallest rotor plan, both ways."""
    rows = []
    for label, model, args, kwargs in (("as written (graph)", graph, (idx,), {"mask": mask}),
                                       ("nn.Sequential", seq, (idx,), {})):
        prof = chainplan.profile(model, *args, loss_fn=F.cross_entropy, target=y,
                                 repeats=3, warmup=1, progress=False, spread_warning=None,
                                 **kwargs)
        t0 = time.perf_counter()
        smallest = chainplan.plan(prof, budget="min")
        plan_s = time.perf_counter() - t0
        store_all = chainplan.plan(prof, budget="min", algo="store-all")

        def step(net: nn.Module, args: tuple = args, kwargs: dict = kwargs) -> None:
            F.cross_entropy(net(*args, **kwargs), y).backward()

        plain = median_time(lambda m=model: step(m), 7)
        wrapped = median_time(lambda n=store_all.wrap(model): step(n), 7)
        rotor = median_time(lambda n=smallest.wrap(model): step(n), 7)
        rows.append((label, prof.num_stages, plan_s, plain, wrapped, rotor))
    print("## Per step, GPT as written against the same GPT as an nn.Sequential\n")
    print("| model | stages | plan(min) s | plain ms | store-all ms | overhead ms | "
          "rotor min ms |")
    print("|---|---|---|---|---|---|---|")
    for label, n, plan_s, plain, wrapped, rotor in rows:
        print(f"| {label} | {n} | {plan_s:.3f} | {plain * 1e3:.1f} | {wrapped * 1e3:.1f} | "
              f"{(wrapped - plain) * 1e3:+.1f} | {rotor * 1e3:.1f} |")


def main() -> None:
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"torch {torch.__version__}, CPU, 1 thread\n")
    graph = GPT(vocab=VOCAB, width=WIDTH, blocks=BLOCKS, seq=SEQ)
    seq = nn.Sequential(Embed(VOCAB, WIDTH, SEQ), *[Block(WIDTH, 4) for _ in range(BLOCKS)],
                        Head(WIDTH, VOCAB))
    idx = torch.randint(0, VOCAB, (BATCH, SEQ))
    mask = torch.ones(SEQ, SEQ, dtype=torch.bool).tril()
    y = torch.randint(0, VOCAB, (BATCH * SEQ,))
    capture_cost(graph, idx, mask, y)
    step_costs(graph, seq, idx, mask, y)


if __name__ == "__main__":
    main()
