"""bench/large (issue 36's billion-parameter benchmark, run by `make gpu-check`): torchtitan's
modes as written there train like the plain model and wrap the blocks torchtitan wraps, the
report's figures against the targets are computed from the right rows, bad arguments exit
2, and the whole benchmark runs end to end at its tiny size on the CPU."""

from __future__ import annotations

import importlib.util
import re
import statistics
import subprocess
import sys
from collections import defaultdict
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
import torch.nn.functional as F

LARGE = Path(__file__).resolve().parents[2] / "bench" / "large"


def _load(name: str) -> ModuleType:
    """bench/large/<name>.py under a name of its own (bench/promise has a report.py too)."""
    spec = importlib.util.spec_from_file_location(f"bench_large_{name}", LARGE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up there
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("mode", ["full", "op", "layer"])
def test_titan_modes_train_like_the_plain_model(mode: str) -> None:
    model_mod, titan = _load("model"), _load("titan")
    c = model_mod.CONFIGS["tiny"]
    model = model_mod.Decoder(c).train()
    idx = torch.randint(0, c.vocab, (2, c.seq))
    target = torch.randint(0, c.vocab, (2 * c.seq,))
    wrapped = titan.apply(model, mode)
    checkpointed = [i for i, b in enumerate(wrapped.layers) if isinstance(b, titan._Checkpointed)]
    # torchtitan counts the blocks from one and wraps every second: the 2nd, 4th, ...
    assert checkpointed == ([1, 3] if mode == "layer" else list(range(c.layers)))
    for net in (model, wrapped):
        F.cross_entropy(net(idx), target).backward()
    for (name, p), q in zip(model.named_parameters(), wrapped.parameters(), strict=True):
        assert p.grad is not None and q.grad is not None
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-5, atol=1e-6, msg=name)
    with pytest.raises(ValueError, match="mode 'none'"):
        titan.apply(model, "none")


def test_op_mode_saves_every_other_matrix_product() -> None:
    titan = _load("titan")
    counts: dict[str, int] = defaultdict(int)  # as titan._contexts makes it

    class Ctx:
        is_recompute = False

    mm = torch.ops.aten.mm.default
    got = [titan._policy(counts, Ctx(), mm) for _ in range(4)]
    must, prefer = torch.utils.checkpoint.CheckpointPolicy.MUST_SAVE, \
        torch.utils.checkpoint.CheckpointPolicy.PREFER_RECOMPUTE
    assert got == [must, prefer, must, prefer]
    assert titan._policy(counts, Ctx(), torch.ops.aten.silu.default) == prefer


def _row(name: str, family: str, peak: float, tokens_s: float) -> dict[str, Any]:
    return {"name": name, "family": family, "peak": peak, "tokens_s": tokens_s,
            "step_s": 1000.0 / tokens_s, "total_peak": 0}


def test_report_figures_against_the_targets() -> None:
    report = _load("report")
    gib = report.GiB
    rows = [
        _row("no checkpointing", "no checkpointing", 40 * gib, 100),
        _row("no checkpointing, fused head", "no checkpointing, fused head", 30 * gib, 105),
        _row("full per-block", "torchtitan full", 10 * gib, 75),
        _row("full per-block, fused head", "torchtitan full, fused head", 8 * gib, 80),
        _row("selective per-op", "torchtitan op", 20 * gib, 90),
        {"name": "torchtitan layer", "error": "failed: CUDA out of memory"},
        _row("chainplan a", "chainplan", 5 * gib, 82),
        _row("chainplan b", "chainplan", 9 * gib, 88),
        _row("chainplan c", "chainplan", 19 * gib, 99),
        _row("chainplan d", "chainplan", 29.5 * gib, 110),
    ]
    text = report.render(rows, {"params": 0.95e9, "seq": 2048, "batch": 8, "stages": 20},
                         "header", None)
    assert "| torchtitan layer | failed: CUDA out of memory |" in text
    assert "activation peak GiB" in text and "| n/a |" in text
    # Every alternative but no checkpointing is a budget: at its peak, chainplan's fastest
    # plan within it, torchtitan's fastest mode within it (no checkpointing included) and
    # the fastest alternative given the fused head within it.
    budgets = {  # alternative's tokens/s: (chainplan's, torchtitan's, fused)
        105: (110, 90, 105),  # no checkpointing, fused head at 30 GiB: chainplan d
        75: (88, 75, 80),  # full per-block at 10 GiB
        80: (82, None, 80),  # full per-block, fused head at 8 GiB: no torchtitan mode
        90: (99, 90, 80)}  # selective per-op at 20 GiB
    titan = [c / t for c, t, _ in budgets.values() if t]
    fused = [c / f for c, _, f in budgets.values()]
    own = [c / a for a, (c, _, _) in budgets.items()]
    m = re.search(r"geometric mean (\S+) over (\d+) budgets \(target at least 1\.10\); "
                  r"against the fastest alternative given the fused head within it (\S+) over "
                  r"(\d+) budgets \(target at least 1\.05\); against the alternative itself "
                  r"(\S+)\.", text)
    assert m, text
    assert float(m[1]) == pytest.approx(statistics.geometric_mean(titan), abs=1e-3)
    assert int(m[2]) == len(titan)
    assert float(m[3]) == pytest.approx(statistics.geometric_mean(fused), abs=1e-3)
    assert int(m[4]) == len(fused)
    assert float(m[5]) == pytest.approx(statistics.geometric_mean(own), abs=1e-3)
    # The smallest chainplan peak whose step is within 1.25x no checkpointing's (a: 12.2 s
    # against 10 s) against full per-block's: 5 / 10.
    assert "chainplan 5.00 GiB (1.22x), full per-block 10.00 GiB: 0.50" in text


@pytest.mark.parametrize("args,message", [
    (["--steps", "0"], "--steps 0: at least 1"),
    (["--warmup", "-1"], "--warmup -1: at least 0"),
    (["--time-limit", "0"], "--time-limit 0.0: seconds"),
    (["--size", "huge"], "invalid choice: 'huge'"),
])
def test_bad_arguments_exit_2(args: list[str], message: str, monkeypatch: pytest.MonkeyPatch,
                              capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # main.py puts bench/large first
    monkeypatch.setattr(sys, "argv", ["main.py", *args])
    main = _load("main")
    with pytest.raises(SystemExit) as e:
        main.main()
    assert e.value.code == 2 and message in capsys.readouterr().err


def test_tiny_runs_end_to_end(tmp_path: Path) -> None:
    """Every variant of `make gpu-large` at the tiny size (the compiled ones left out: their
    compilation alone takes minutes on this machine): a row of figures each, no failure,
    the targets' lines and the frontier's points."""
    out = tmp_path / "large.md"
    res = subprocess.run([sys.executable, str(LARGE / "main.py"), "--tiny", "--no-compile",
                          "--steps", "1", "--warmup", "0", "--sweep", "0", "-o", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-2000:]
    text = out.read_text()
    names = ["no checkpointing", "full per-block", "selective per-op (save list)",
             "selective per-layer (every 2nd block)"]
    for name in names + [n + ", fused head" for n in names] + ["chainplan min"]:
        assert re.search(rf"^\| {re.escape(name)} \| [0-9.]+ \| n/a \| \d+ \|", text, re.M), \
            (name, text)
    assert "failed" not in text and "not run" not in text, text
    assert "**Equal measured memory.**" in text
    assert (tmp_path / "large-points.json").exists()
