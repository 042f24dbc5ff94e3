"""chainplan against torchtitan's activation checkpointing on a billion-parameter decoder.

One device, the model of bench/large/model.py (``1b``: 0.95 billion parameters, sequence
2048), bf16 autocast, AdamW, one micro-batch per step sized to fill the device (``--batch
0``: the largest the plain step fits in, from a one-sample measurement), each variant in a
process of its own (its memory, and torch.compile's caches, its own):

* ``no checkpointing``; torchtitan's modes (bench/large/titan.py): ``full`` per block,
  selective per ``op`` (its save list) and per ``layer`` (every second block);
* ``torch.compile`` with ``activation_memory_budget`` 0.5 and 0.2;
* each of those alternatives also with the fused head (bench/promise/systems.py's
  ``fused_head``: chainplan's ``linear_cross_entropy`` in place of the head and PyTorch's
  loss, no plan), so that what the plan adds is measured apart from what the fused head
  adds (the compiled ones last: the first to go when the time runs out);
* chainplan eager: the model with its loss inside (``chainplan.WithLoss``, the head's
  cross-entropy fused), planned from one profile at budgets from its smallest to store-all
  and at each alternative's measured peak; chainplan compiled: ``--compile-plans`` of those
  plans under ``torch.compile``.

Each variant reports tokens per second (the median of ``--steps`` timed steps after
``--warmup``, optimizer step included) and two measured peaks: the activation peak of one
step (``chainplan.measure``: parameters, gradients and optimizer state excluded, the input
included; what chainplan's budgets count) and, on CUDA, ``max_memory_allocated`` over the
timed steps (everything). The report compares chainplan with the alternatives at equal
measured memory (its fastest plan whose activation peak is at most theirs) and draws the
frontier (``go run ./bench/promise/frontier``; the points are kept beside the report for a
machine without Go).

The whole run stays within ``--time-limit`` seconds: a variant that would start after it is
reported as not run, one that fails (out of memory) as failed, and the others still run.
Run from the repository root::

    python bench/large/main.py --device cuda -o build/gpu/large.md     # make gpu-check
    python bench/large/main.py --tiny -o /tmp/large.md                 # the CPU check
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, os.path.dirname(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "python"))
os.environ.setdefault("CHAINPLAN_DB", os.path.join(tempfile.mkdtemp(), "large.db"))

from child import run_child  # noqa: E402
from model import CONFIGS  # noqa: E402
from report import render, size  # noqa: E402

ALTERNATIVES = ["plain", "full", "op", "layer"]
COMPILED = [0.5, 0.2]


def child(spec: dict[str, Any], args: argparse.Namespace, deadline: float) -> list[dict[str, Any]]:
    """Run one variant (or chainplan's plans) in a fresh process; its rows, or one row
    saying why there are none."""
    left = deadline - time.monotonic()
    name = spec.get("name", spec["kind"])
    if left < 10:
        return [{"name": name, "error": "not run: the time limit was reached"}]
    cmd = [sys.executable, __file__, "--child", json.dumps(spec), "--device", args.device,
           "--size", args.size, "--batch", str(args.batch), "--steps", str(args.steps),
           "--warmup", str(args.warmup), "--dtype", args.dtype]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=left)
    except subprocess.TimeoutExpired:
        return [{"name": name, "error": f"stopped at the time limit ({args.time_limit} s)"}]
    rows = [json.loads(line[5:]) for line in out.stdout.splitlines() if line.startswith("ROW: ")]
    if out.returncode != 0:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1][:200]
        print(f"bench/large: {name} failed (exit {out.returncode}): {tail}", file=sys.stderr)
        rows.append({"name": name, "error": f"failed: {tail}"})
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--tiny", action="store_true", help="the tiny model (the CPU check)")
    ap.add_argument("--size", default="", choices=["", *CONFIGS], help=argparse.SUPPRESS)
    ap.add_argument("--batch", type=int, default=0,
                    help="micro-batch (0: the largest the plain step fits in, on CUDA)")
    ap.add_argument("--dtype", choices=("bf16", "fp32"), default="",
                    help="bf16 autocast or float32 (default: bf16 on CUDA, fp32 on a CPU)")
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--sweep", type=int, default=2,
                    help="chainplan budgets between its smallest and store-all")
    ap.add_argument("--compile-plans", type=int, default=1)
    ap.add_argument("--no-compile", action="store_true",
                    help="skip torch.compile and chainplan compiled")
    ap.add_argument("--time-limit", type=float, default=450.0)
    ap.add_argument("-o", "--output", default="")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    for flag, least in (("steps", 1), ("warmup", 0), ("batch", 0), ("sweep", 0),
                        ("compile_plans", 0)):
        if getattr(args, flag) < least:
            ap.error(f"--{flag.replace('_', '-')} {getattr(args, flag)}: at least {least}")
    if not args.time_limit > 0:
        ap.error(f"--time-limit {args.time_limit}: seconds, more than 0")
    args.size = args.size or ("tiny" if args.tiny else "1b")
    args.dtype = args.dtype or ("bf16" if args.device == "cuda" else "fp32")
    if args.device == "cuda" and not torch.cuda.is_available():
        print("bench/large: --device cuda, but no CUDA device is present", file=sys.stderr)
        return 2
    if args.child:
        for row in run_child(json.loads(args.child), args):
            print("ROW: " + json.dumps(row), flush=True)
        return 0
    t0 = time.monotonic()
    deadline = t0 + args.time_limit
    prof = child({"kind": "profile"}, args, deadline)[-1]  # its row, or why there is none
    if "error" in prof:
        print(f"bench/large: the profile failed: {prof['error']}", file=sys.stderr)
        return 1
    args.batch = prof["batch"]
    rows: list[dict[str, Any]] = []
    for mode in ALTERNATIVES:
        rows += child({"kind": "titan", "mode": mode, "name": f"torchtitan {mode}"}, args,
                      deadline)
    budgets = {"min": "min", **{f"@ {r['name']}": r["peak"] for r in rows if "peak" in r}}
    ours = child({"kind": "chainplan", "name": "chainplan", "run_id": prof["run_id"],
                  "budgets": budgets, "sweep": args.sweep}, args, deadline)
    rows += ours
    if not args.no_compile:
        for b in COMPILED:
            rows += child({"kind": "compile", "budget": b, "name": f"torch.compile, budget {b}"},
                          args, deadline)
        plans = sorted({r["budget"] for r in ours if "budget" in r})
        keep = [plans[round(i * (len(plans) - 1) / max(1, args.compile_plans - 1))]
                for i in range(min(args.compile_plans, len(plans)))] if plans else []
        if keep:
            rows += child({"kind": "chainplan", "name": "chainplan + compile",
                           "run_id": prof["run_id"], "compiled": True,
                           "budgets": {size(b): b for b in keep}, "sweep": 0},
                          args, deadline)
        for b in COMPILED:
            rows += child({"kind": "compile", "budget": b, "fused": True,
                           "name": f"torch.compile, budget {b}, fused head"}, args, deadline)
    header = (f"Generated by `python bench/large/main.py {' '.join(sys.argv[1:])}` on "
              f"{_device(args.device)}, {args.dtype}, torch {torch.__version__}, "
              f"{time.strftime('%Y-%m-%d')}, "
              f"in {time.monotonic() - t0:.0f} s. Do not edit by hand.")
    out = Path(args.output) if args.output else None
    text = render(rows, prof, header, out)
    print(text)
    if out:
        out.write_text(text)
    return 0


def _device(device: str) -> str:
    if device == "cuda":
        return torch.cuda.get_device_name()
    return f"{platform.processor() or platform.machine()}, {os.cpu_count()} CPUs"


if __name__ == "__main__":
    sys.exit(main())
