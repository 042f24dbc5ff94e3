"""chainplan under FSDP2 against what FSDP2 users checkpoint with, on 2 CPU gloo ranks.

A GPT (tests/graph/models.py: blocks in a ModuleList, a mask argument, tied embeddings;
dropout off), every block and the root ``fully_shard``ed, each rank training on its own
batch. The variants (bench/fsdp/variants.py): FSDP2 alone; per-block full checkpointing and
per-operation selective checkpointing (torchtitan's save list; and torchtitan's own policy,
which recomputes every second ``mm``); every block compiled under
``activation_memory_budget``; chainplan at each alternative's measured per-rank peak and at
budgets spread from its smallest plan to store-all (bench/fsdp/ranks.py).

Each session is a process group of its own (2 spawned ranks, in a child process with a time
limit): the compiled variants one session per ``activation_memory_budget`` (the partitioner's
choice is kept by the compiled code), each beside its own FSDP2 plain run; then the main
session, whose chainplan variants are planned at every alternative's measured peak, the
compiled ones' included. Times are compared as ratios to the plain FSDP2 step of the same
session (bench/fsdp/report.py). Run from the repository root after ``make bind``::

    nice .venv/bin/python bench/fsdp/main.py [--rounds 15] [--sweep 4] [--gathered stage]
        [--compile-budgets 0.5,0.1] [--compile-timeout 420] [-o docs/distributed-bench.md]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))

from report import Row, render, rows_of  # noqa: E402

WORLD = 2
SIZE = {"vocab": 2048, "width": 128, "heads": 4, "blocks": 4, "seq": 128, "batch": 4}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def session_child(spec_path: str) -> int:
    """In a child process: spawn the ranks of one session and wait for them."""
    import ranks
    import torch.multiprocessing as mp

    out = str(Path(spec_path).parent)
    mp.start_processes(ranks.run_session, args=(WORLD, _free_port(), spec_path, out),
                       nprocs=WORLD, start_method="spawn")
    return 0


def run_session(spec: dict[str, Any], timeout: float) -> tuple[list[dict[str, Any]], str]:
    """Run one session with a time limit; each rank's results, or why there are none."""
    tmp = Path(tempfile.mkdtemp(prefix="bench-fsdp-"))
    (tmp / "spec.json").write_text(json.dumps(spec))
    t0 = time.perf_counter()
    try:
        done = subprocess.run([sys.executable, __file__, "--session", str(tmp / "spec.json")],
                              timeout=timeout, capture_output=True, text=True)
    except subprocess.TimeoutExpired:
        return [], f"did not finish within {timeout:.0f} s"
    took = time.perf_counter() - t0
    if done.returncode != 0:
        return [], f"failed after {took:.0f} s (exit {done.returncode}): {done.stderr[-2000:]}"
    got = [json.loads((tmp / f"rank{r}.json").read_text()) for r in range(WORLD)]
    errors = [g["error"] + "\n" + g["trace"] for g in got if "error" in g]
    if errors:
        return [], f"failed after {took:.0f} s: {errors[0]}"
    return got, ""


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--sweep", type=int, default=4,
                    help="chainplan budgets between its smallest plan and store-all")
    ap.add_argument("--compile-budgets", default="0.5,0.1",
                    help="activation_memory_budget values, one session each ('' for none)")
    ap.add_argument("--compile-timeout", type=float, default=420,
                    help="seconds a compiled session may take")
    ap.add_argument("--size", default="", help="JSON overriding the model's size "
                    f"(default {json.dumps(SIZE)})")
    ap.add_argument("--model", choices=("gpt", "gpt-chain"), default="gpt",
                    help="gpt: blocks in a ModuleList (every unit gathered for the step under "
                    "a plan); gpt-chain: an nn.Sequential (gathered per stage)")
    ap.add_argument("--gathered", choices=("step", "stage"), default="step",
                    help="gpt: every FSDP unit gathered for the step under a plan (step), "
                    "or each around the stages reading it (stage; every rank runs rank 0's "
                    "plan)")
    ap.add_argument("-o", "--output", default="")
    ap.add_argument("--render", default="",
                    help="render the measurements a run saved (its JSON) instead of running")
    ap.add_argument("--session", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.session:
        return session_child(args.session)
    if args.render:
        saved = json.loads(Path(args.render).read_text())
        return _write(render([Row(**r) for r in saved["rows"]], saved["header"],
                             saved["rounds"], saved["notes"]), args.output)
    size = dict(SIZE)
    if args.size:
        try:
            extra = json.loads(args.size)
        except json.JSONDecodeError as e:
            print(f"bench/fsdp: --size is not JSON ({e})", file=sys.stderr)
            return 2
        unknown = sorted(set(extra) - set(SIZE))
        if unknown:
            print(f"bench/fsdp: --size has unknown fields {unknown} (known: {sorted(SIZE)})",
                  file=sys.stderr)
            return 2
        size.update(extra)
    chain = args.model == "gpt-chain"
    t0 = time.perf_counter()
    rows: list[Row] = []
    notes: list[str] = []
    targets: dict[str, int] = {}
    for b in [float(x) for x in args.compile_budgets.split(",") if x]:
        t = time.perf_counter()
        got, why = run_session({"kind": "compile", "size": size, "chain": chain,
                                "rounds": args.rounds, "compile_budget": b},
                               args.compile_timeout)
        name = f"FSDP2 + compile, budget {b}"
        if why:
            notes.append(f"{name}: {why}")
            print(f"bench/fsdp: {name}: {why}", file=sys.stderr, flush=True)
            continue
        session = rows_of(got, f"compile {b}")
        rows += [r for r in session if r.family != "plain"]
        targets[name] = next(r.peak for r in session if r.family == "compile")
        notes.append(f"{name}: session (compilation, checks, {args.rounds} rounds) "
                     f"{time.perf_counter() - t:.0f} s, set-up {session[0].setup_s:.0f} s")
        print(f"bench/fsdp: {name} done ({time.perf_counter() - t0:.0f} s)", file=sys.stderr,
              flush=True)
    got, why = run_session({"kind": "main", "size": size, "chain": chain, "rounds": args.rounds,
                            "sweep": args.sweep, "targets": targets,
                            "gathered": args.gathered}, 1800)
    if why:
        print(f"bench/fsdp: the main session {why}", file=sys.stderr)
        return 1
    rows = rows_of(got, "main") + rows
    command = f"nice .venv/bin/python bench/fsdp/main.py {_command(sys.argv)}".strip()
    header = (f"Generated by `{command}` on {platform.processor() or platform.machine()}, "
              f"{os.cpu_count()} CPUs (shared), {WORLD} gloo ranks of 1 thread each, torch "
              f"{_torch_version()}, {time.strftime('%Y-%m-%d')}, in "
              f"{time.perf_counter() - t0:.0f} s. Model: {args.model} {json.dumps(size)} (batch "
              "per rank). Do not edit by hand.")
    saved = Path(tempfile.mkdtemp(prefix="bench-fsdp-"), "rows.json")
    saved.write_text(json.dumps({"rows": [dataclasses.asdict(r) for r in rows],
                                 "header": header, "rounds": args.rounds, "notes": notes}))
    print(f"bench/fsdp: the measurements are in {saved} (--render)", file=sys.stderr)
    return _write(render(rows, header, args.rounds, notes), args.output)


def _write(text: str, output: str) -> int:
    print(text)
    if output:
        Path(output).write_text(text)
    return 0


def _command(argv: list[str]) -> str:
    """The arguments that decide the figures (``-o`` only says where they are written)."""
    out, skip = [], False
    for a in argv[1:]:
        if skip:
            skip = False
        elif a in ("-o", "--output"):
            skip = True
        elif not a.startswith(("-o", "--output=")):
            out.append(a)
    return " ".join(out)


def _torch_version() -> str:
    import torch

    return str(torch.__version__)


if __name__ == "__main__":
    sys.exit(main())
