"""The head fused or not as an option of the last stage (issue 36), on bench/promise's models.

Three steps of each model with its loss inside (``chainplan.WithLoss``), timed in alternating
rounds: the plain step; chainplan's store-all plan (``rotor-ops`` at a budget far above the
plain peak) from the profile with the head option, where the planner runs whichever head
the profile measured faster; and the same plan from the profile without it (the form
option taken out), which always runs the fused head. Ratios to the plain step of the same
process; the measured peak of each; the head's fused and unfused times as the profile
measured them (the CPU's profiles leave the option out by default: the unfused head costs
the step more than its own time there, chainplan.graph.headform.DEVICES).

    .venv/bin/python bench/promise/headform.py --models llama,gpt --rounds 7
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import MODELS  # noqa: E402

import chainplan  # noqa: E402
from chainplan.graph import headform  # noqa: E402
from chainplan.schema import read_rows, write_profile  # noqa: E402


def without_forms(path: Path, out: Path) -> Path:
    """The profile at ``path`` with its form options taken out: the head always fused."""
    rows, meta = read_rows(path)
    kept = []
    for r in rows:
        opts = [o for o in json.loads(r.options_json or "[]") if not o.get("form")]
        kept.append(dataclasses.replace(r, options_json=json.dumps(opts) if opts else None))
    return write_profile(out, kept, meta)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default="llama,gpt")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    # The profile measures the unfused head on the CPU too, which it does not by default
    # (chainplan.graph.headform.DEVICES): what this benchmark measures is why.
    headform.DEVICES = headform.DEVICES | {"cpu"}
    tmp = Path(tempfile.mkdtemp(prefix="headform-"))
    print("| model | variant | head | measured peak MiB | time / plain | "
          "profiled head F+B ms, fused / unfused |")
    print("|---|---|---|---|---|---|")
    for name in args.models.split(","):
        torch.manual_seed(0)
        case = MODELS[name]()
        net = chainplan.WithLoss(case.model.train(), case.loss_fn)
        call = {"labels": case.target, **case.kwargs}
        prof = chainplan.profile(net, *case.args, repeats=5, warmup=2, progress=False,
                                 spread_warning=None, ingest=False, **call)
        fused = without_forms(prof.path, tmp / f"{name}-fused.arrow")
        budget = 10**12
        plans = {"head option": chainplan.plan(prof.path, budget=budget, algo="rotor-ops"),
                 "always fused": chainplan.plan(fused, budget=budget, algo="rotor-ops")}
        nets = {"plain": net, **{k: p.wrap(net) for k, p in plans.items()}}
        times: dict[str, list[float]] = {k: [] for k in nets}
        for n in nets.values():  # one untimed step each
            n(*case.args, **call)["loss"].backward()
        for _ in range(args.rounds):
            for k, n in nets.items():
                t0 = time.perf_counter()
                n(*case.args, **call)["loss"].backward()
                times[k].append(time.perf_counter() - t0)
                for q in net.parameters():
                    q.grad = None
        plain = statistics.median(times["plain"])
        n = len(prof.stage_names)
        last = [r for r in prof.rows if r.stage_index == n]
        fused_ms = statistics.median(r.fwd_time_s for r in last) + statistics.median(
            r.bwd_time_s for r in last)
        form = [o for o in json.loads(last[0].options_json or "[]") if o.get("form")]
        heads = (f"{fused_ms * 1e3:.1f} / "
                 f"{(form[0]['fwd_time'] + form[0]['bwd_time']) * 1e3:.1f}" if form else "")
        for k, n in nets.items():
            peak = chainplan.measure(n, *case.args, steps=1, store=False, **call).peak_bytes
            head = ("PyTorch's" if k == "plain" else
                    "unfused" if plans[k].forms else "fused")
            print(f"| {name} | {k} | {head} | {peak / 2**20:.1f} | "
                  f"{statistics.median(times[k]) / plain:.3f} | {heads} |")


if __name__ == "__main__":
    main()
