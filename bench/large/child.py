"""One process of the large benchmark (bench/large/main.py): the profile, one alternative,
or chainplan's plans, each measured the same way (:func:`measure`)."""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from model import CONFIGS, Decoder
from titan import apply

import chainplan

GiB = 2**30


def _systems() -> Any:
    """bench/promise/systems.py (its ``fused_head``: one definition of the alternatives'
    fused head), loaded by path: bench/promise's other modules share names with ours."""
    path = Path(__file__).resolve().parents[1] / "promise" / "systems.py"
    spec = importlib.util.spec_from_file_location("promise_systems", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


#: Autocast to bf16 (on CUDA; on a CPU without bf16 units it is several times slower than
#: float32, so the CPU check runs in float32: ``--dtype fp32``, the default there).
BF16 = [True]


def _autocast(device: str) -> torch.autocast:
    return torch.autocast(device_type=device, dtype=torch.bfloat16, enabled=BF16[0])


def _data(args: argparse.Namespace, batch: int) -> tuple[torch.Tensor, torch.Tensor]:
    c = CONFIGS[args.size]
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, c.vocab, (batch, c.seq), generator=g)
    target = torch.randint(0, c.vocab, (batch * c.seq,), generator=g)
    return idx.to(args.device), target.to(args.device)


def _model(args: argparse.Namespace) -> torch.nn.Module:
    """The decoder, its parameters made on the device (a billion initialized on the CPU
    first would take most of a minute of the time limit)."""
    torch.manual_seed(0)
    with torch.device(args.device):
        return Decoder(CONFIGS[args.size]).train()


def _peak(net: torch.nn.Module, own_loss: bool, idx: torch.Tensor, target: torch.Tensor,
          device: str) -> int:
    """The activation peak of one step (chainplan.measure's, under the step's autocast)."""
    with _autocast(device):
        if own_loss:
            return chainplan.measure(net, idx, labels=target, steps=1, store=False).peak_bytes
        return chainplan.measure(net, idx, loss_fn=F.cross_entropy, target=target, steps=1,
                                 store=False).peak_bytes


def measure(net: torch.nn.Module, own_loss: bool, opt: torch.optim.Optimizer,
            idx: torch.Tensor, target: torch.Tensor, args: argparse.Namespace) -> dict[str, Any]:
    """Tokens per second over ``args.steps`` training steps (forward, backward, AdamW), the
    activation peak of one step, and on CUDA the peak of everything over the timed steps."""
    def step() -> None:
        with _autocast(args.device):
            out = net(idx, labels=target) if own_loss else net(idx)
            loss = out["loss"] if own_loss else F.cross_entropy(out, target)
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=False)  # gradients stay allocated: not activations

    for _ in range(args.warmup):  # allocations, captures, compilation
        step()
    _sync(args.device)
    if args.device == "cuda":
        torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        _sync(args.device)
        t0 = time.perf_counter()
        step()
        _sync(args.device)
        times.append(time.perf_counter() - t0)
    total = torch.cuda.max_memory_allocated() if args.device == "cuda" else 0
    s = statistics.median(times)
    return {"step_s": s, "tokens_s": idx.numel() / s, "total_peak": total,
            "peak": _peak(net, own_loss, idx, target, args.device)}


def _optimizer(model: torch.nn.Module, device: str) -> torch.optim.Optimizer:
    return torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device == "cuda")


def _batch(args: argparse.Namespace, model: torch.nn.Module) -> int:
    """The micro-batch: ``--batch``, else on CUDA the largest whose plain step fits in 85 %
    of what the parameters, gradients and AdamW's two states leave (activations grow
    linearly with the batch; measured at one sample), else 2."""
    if args.batch > 0:
        return int(args.batch)
    if args.device != "cuda":
        return 2
    idx, target = _data(args, 1)
    one = _peak(model, False, idx, target, args.device)
    model.zero_grad(set_to_none=True)
    state = 4 * sum(p.numel() * p.element_size() for p in model.parameters())
    room = 0.85 * torch.cuda.mem_get_info()[1] - state
    return max(1, int(room // one))


def _profile(spec: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    model = _model(args)
    batch = _batch(args, model)
    idx, target = _data(args, batch)
    net = chainplan.WithLoss(model, F.cross_entropy)
    with _autocast(args.device):
        prof = chainplan.profile(net, idx, labels=target, repeats=3, warmup=1, progress=False,
                                 name=f"large-{args.size}", spread_warning=None)
    return [{"batch": batch, "run_id": prof.run_id, "stages": prof.num_stages,
             "params": sum(p.numel() for p in model.parameters()),
             "seq": CONFIGS[args.size].seq}]


def _titan(spec: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """One of torchtitan's modes (or no checkpointing), with PyTorch's head and loss, then
    the same wrapped model with the fused head (bench/promise/systems.py's ``fused_head``:
    chainplan's ``linear_cross_entropy`` without a plan), a fresh optimizer each: what
    the fused head adds, apart from what a plan adds. One process for both saves a start
    and an initialization of the model."""
    mode = spec["mode"]
    model = _model(args)
    idx, target = _data(args, args.batch)
    name, family = {"plain": ("no checkpointing", "no checkpointing"),
                    "full": ("full per-block", "torchtitan full"),
                    "op": ("selective per-op (save list)", "torchtitan op"),
                    "layer": ("selective per-layer (every 2nd block)", "torchtitan layer")}[mode]
    net = model if mode == "plain" else apply(model, mode)
    del model
    rows = []
    for fused in (False, True):
        if fused:
            net = _systems().fused_head(net, "lm_head")
        if args.device == "cuda":
            torch.cuda.empty_cache()
        opt = _optimizer(net, args.device)
        suffix = ", fused head" if fused else ""
        rows.append({"name": name + suffix, "family": family + suffix,
                     **measure(net, fused, opt, idx, target, args)})
        del opt  # its AdamW state is not the next variant's
        net.zero_grad(set_to_none=True)
    return rows


def _compile(spec: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """``torch.compile(model)`` under an activation memory budget; with ``fused`` the
    model's head fused into the loss first (as in :func:`_titan`)."""
    import torch._functorch.config as fconfig

    fconfig.activation_memory_budget = spec["budget"]
    model = _model(args)
    fused = bool(spec.get("fused"))
    if fused:
        model = _systems().fused_head(model, "lm_head")
    idx, target = _data(args, args.batch)
    net = torch.compile(model)
    family = "torch.compile" + (", fused head" if fused else "")
    return [{"name": spec["name"], "family": family, "memory_budget": spec["budget"],
             **measure(net, fused, _optimizer(model, args.device), idx, target, args)}]  # type: ignore[arg-type]


def _chainplan(spec: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    """chainplan's plans at the given budgets and ``sweep`` budgets spread from its smallest
    to store-all, identical plans run once, all on one model and optimizer."""
    model = _model(args)
    idx, target = _data(args, args.batch)
    net = chainplan.WithLoss(model, F.cross_entropy)
    opt = _optimizer(model, args.device)
    run_id = spec["run_id"]
    compiled = bool(spec.get("compiled"))
    budgets: dict[str, Any] = dict(spec["budgets"])
    if spec.get("sweep"):
        lo = chainplan.plan(run_id, budget="min").budget_bytes
        hi = chainplan.plan(run_id, budget="min", algo="store-all").budget_bytes
        n = spec["sweep"]
        budgets.update({f"sweep {j}": lo + (hi - lo) * j // (n + 1) for j in range(1, n + 1)})
        budgets["store-all"] = hi
    family = "chainplan + compile" if compiled else "chainplan"
    rows: list[dict[str, Any]] = []
    seen: dict[str, dict[str, Any]] = {}
    for label, budget in budgets.items():
        name = f"{family} {label}"
        try:
            p = chainplan.plan(run_id, budget=budget)
        except chainplan.InfeasibleBudget as e:
            rows.append({"name": name, "error": f"infeasible (min {e.min_budget_bytes / GiB:.2f} "
                                                "GiB)"})
            continue
        key = str(p) + repr(sorted(p.choices.items()))
        if key in seen:
            seen[key]["name"] += f", {label}"
            continue
        wrapped: Callable[..., Any] = p.wrap(net)
        if compiled:
            wrapped = torch.compile(wrapped)
        row = {"name": name, "family": family, "budget": p.budget_bytes,
               "predicted": p.peak_bytes,
               **measure(wrapped, True, opt, idx, target, args)}  # type: ignore[arg-type]
        seen[key] = row
        rows.append(row)
    return rows


def run_child(spec: dict[str, Any], args: argparse.Namespace) -> list[dict[str, Any]]:
    torch.set_float32_matmul_precision("high")
    BF16[0] = args.dtype == "bf16"
    if args.device == "cpu":
        torch.set_num_threads(1)
    kinds = {"profile": _profile, "titan": _titan, "compile": _compile,
             "chainplan": _chainplan}
    return kinds[spec["kind"]](spec, args)
