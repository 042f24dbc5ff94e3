"""Towers joined at the loss, measured on running models: multichain against one chain.

Two models: a CLIP-like dual encoder (an image tower of residual convolution blocks, a text
tower of transformer layers, a contrastive loss with a learned temperature) and a triplet
network (one residual convolution tower on an anchor, a positive and a negative, the triplet
margin loss). For each, the measured activation peak and step time of

* the plain model (no recomputation);
* per-block checkpointing: ``torch.utils.checkpoint`` (non-reentrant) around every stage of
  every tower, the usual way to save memory without a planner;
* ``multichain`` (the faster of the multi-chain DP, rotor on the concatenated towers and no
  recomputation) and ``multichain-linear`` (rotor on the towers concatenated into one chain,
  in the best order: what planning the towers as one chain gives), both planned with
  per-block checkpointing's *measured* peak as the budget, so that the comparison is at equal
  measured memory, and at their smallest budgets.

Every variant is timed in one process, alternating: round r runs one step of every variant
in turn, and the figure is the median over the rounds. Peaks come from ``chainplan.measure``
(CPU allocator events; parameters, gradients and optimizer state excluded, the inputs
included). One thread: on a shared CPU more threads mostly measure the neighbours.

Run from the repository root after ``make bind``::

    .venv/bin/python bench/multichain/measured.py [--rounds 7] [-o docs/multichain-bench.md]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "bench.db"))

import chainplan  # noqa: E402
from chainplan.stages import flatten_stages  # noqa: E402
from chainplan.towers.detect import find_towers  # noqa: E402

MiB = 2**20


class ConvBlock(nn.Module):
    """A residual block of two 3×3 convolutions with BatchNorm."""

    def __init__(self, c: int) -> None:
        super().__init__()
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.b2 = nn.BatchNorm2d(c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(x + self.b2(self.c2(F.relu(self.b1(self.c1(x))))))


def image_tower(blocks: int, width: int, dim: int) -> nn.Sequential:
    head = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(width, dim))
    return nn.Sequential(nn.Conv2d(3, width, 3, padding=1),
                         *[ConvBlock(width) for _ in range(blocks)], head)


class Encoder(nn.Module):
    def __init__(self, width: int) -> None:
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(width, 4, 4 * width, dropout=0.0,
                                                batch_first=True)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layer(x)


class Pool(nn.Module):
    def __init__(self, width: int, dim: int) -> None:
        super().__init__()
        self.proj = nn.Linear(width, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x.mean(dim=1))


class Clip(nn.Module):
    """``forward(images, tokens)`` returns the symmetric contrastive loss."""

    def __init__(self) -> None:
        super().__init__()
        self.image = image_tower(8, 32, 64)
        self.text = nn.Sequential(nn.Embedding(1000, 128), *[Encoder(128) for _ in range(4)],
                                  Pool(128, 64))
        self.log_scale = nn.Parameter(torch.tensor(2.6))

    def forward(self, images: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        a = F.normalize(self.image(images), dim=-1)
        b = F.normalize(self.text(tokens), dim=-1)
        logits = self.log_scale.exp() * a @ b.T
        y = torch.arange(len(logits))
        return (F.cross_entropy(logits, y) + F.cross_entropy(logits.T, y)) / 2


class TripletNet(nn.Module):
    """One tower on three inputs; ``forward`` returns the triplet margin loss."""

    def __init__(self) -> None:
        super().__init__()
        self.tower = image_tower(6, 32, 64)
        self.loss = nn.TripletMarginLoss()

    def forward(self, a: torch.Tensor, p: torch.Tensor, n: torch.Tensor) -> torch.Tensor:
        out: torch.Tensor = self.loss(self.tower(a), self.tower(p), self.tower(n))
        return out


class PerBlock(nn.Module):
    """The model with ``torch.utils.checkpoint`` around every stage of every tower."""

    def __init__(self, model: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
        super().__init__()
        self.model = model
        split = find_towers(model, inputs, required=True)
        assert split is not None
        self.towers = split.towers

    @contextlib.contextmanager
    def _checkpointed(self) -> Iterator[None]:
        def run(stages: list[nn.Module]) -> Callable[..., torch.Tensor]:
            def forward(x: torch.Tensor) -> torch.Tensor:
                for s in stages:
                    x = checkpoint(s, x, use_reentrant=False)
                return x
            return forward
        for t in self.towers:
            t.forward = run(flatten_stages(t))
        try:
            yield
        finally:
            for t in self.towers:
                del t.forward

    def forward(self, *inputs: torch.Tensor) -> Any:
        with self._checkpointed():
            return self.model(*inputs)


@dataclass
class Variant:
    name: str
    net: nn.Module
    budget: int = 0
    peak: int = 0
    times: list[float] = field(default_factory=list)

    @property
    def ms(self) -> float:
        return statistics.median(self.times) * 1e3


def identity(loss: torch.Tensor) -> torch.Tensor:
    return loss


def measure_all(variants: list[Variant], model: nn.Module, inputs: tuple[torch.Tensor, ...],
                rounds: int) -> None:
    for v in variants:
        v.peak = chainplan.measure(v.net, *inputs, loss_fn=identity, steps=1,
                                   store=False).peak_bytes
    for _ in range(rounds):
        for v in variants:
            t0 = time.perf_counter()
            v.net(*inputs).backward()
            v.times.append(time.perf_counter() - t0)
        model.zero_grad(set_to_none=False)


def bench(name: str, model: nn.Module, inputs: tuple[torch.Tensor, ...], rounds: int,
          out: list[str]) -> None:
    model.train()
    prof = chainplan.profile(model, *inputs, repeats=5, warmup=2, progress=False, name=name)
    plain = Variant("plain (no recomputation)", model)
    per_block = Variant("per-block checkpointing", PerBlock(model, inputs))
    measure_all([plain, per_block], model, inputs, 1)
    variants = [plain, per_block]
    for algo in ("multichain", "multichain-linear"):
        for label, budget in (("at per-block's peak", per_block.peak),
                              ("smallest budget", "min")):
            try:
                p = chainplan.plan(prof, budget=budget, algo=algo)
            except chainplan.InfeasibleBudget as e:
                out.append(f"<!-- {algo} {label}: infeasible, min {e.min_budget_bytes} -->")
                continue
            chosen = f", chose {p.chosen}" if p.chosen else ""
            variants.append(Variant(f"{algo} {label}{chosen}", p.wrap(model),
                                    budget=p.budget_bytes))
    for v in variants:
        v.times = []
    measure_all(variants, model, inputs, rounds)
    params = sum(p.numel() for p in model.parameters())
    out.append(f"## {name} (towers of {', '.join(map(str, prof.tower_stages))} stages, "
               f"branches {', '.join(map(str, prof.branch_stages))}; {params:,} parameters)\n")
    out.append("| variant | budget MiB | measured peak MiB | step ms | time / plain | "
               "time / per-block |")
    out.append("|---|---|---|---|---|---|")
    for v in variants:
        budget = f"{v.budget / MiB:.2f}" if v.budget else ""
        out.append(f"| {v.name} | {budget} | {v.peak / MiB:.2f} | {v.ms:.1f} | "
                   f"{v.ms / plain.ms:.3f} | {v.ms / per_block.ms:.3f} |")
    out.append("")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("-o", "--output", default="")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    start = time.perf_counter()
    out = ["# Towers joined at the loss, measured", "",
           f"Generated by `bench/multichain/measured.py --rounds {args.rounds}` on "
           f"{platform.processor() or platform.machine()}, torch {torch.__version__}, "
           f"{args.threads} thread(s), a CPU shared with other jobs (load average "
           f"{os.getloadavg()[0]:.1f}); times are medians of alternating rounds, so the "
           "ratios are the figures to read. Do not edit by hand.", ""]
    bench("clip", Clip(), (torch.randn(32, 3, 32, 32), torch.randint(0, 1000, (32, 32))),
          args.rounds, out)
    bench("triplet", TripletNet(), tuple(torch.randn(32, 3, 32, 32) for _ in range(3)),
          args.rounds, out)
    out.append(f"Total {time.perf_counter() - start:.0f} s.")
    text = "\n".join(out) + "\n"
    if args.output:
        with open(args.output, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    sys.exit(main())
