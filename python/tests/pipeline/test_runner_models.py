"""The executor on models as written and on plans that recompute, on two CPU ranks (gloo):
a GPT looping over a ``ModuleList`` (a mask argument, tied embeddings, dropout) and a
denoiser whose side value needs a gradient, cut from their graphs as ``chainplan.profile``
cut them, give the gradients of one process; recomputing stages give them too and replay
the forward's random numbers; and every rank's measured peak is within the plan's memory
for it (the per-device memory model, docs/pipeline.md)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

import chainplan
from chainplan.pipeline import pipeline_plan
from tests.pipeline import model_workers, session
from tests.pipeline.plans import modulo_plan

TOL = 1e-5


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = tmp_path_factory.mktemp("db") / "chainplan.db"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CHAINPLAN_DB", str(path))
        yield path


def _graph_plan(name: str, **kwargs: Any) -> Any:
    """A plan of a profile of the graph model ``name`` at the micro-batch size."""
    case = model_workers.graph_case(name, model_workers.MICROBATCH)
    prof = chainplan.profile(case.model, case.args[0], loss_fn=case.loss_fn,
                             target=case.target, spread_warning=None, **case.kwargs)
    return pipeline_plan(prof, gpus=2, bandwidth="1GB/s", microbatches=4, **kwargs)


def _sc(name: str, kind: str, plan: dict[str, Any], **options: Any) -> dict[str, Any]:
    return {"name": name, "kind": kind, "plan": plan, "options": options}


def _wave(doc: dict[str, Any]) -> list[int]:
    """Four stages over the layers of ``doc``'s chain: the embedding alone, the blocks in two
    halves, the head alone (as many layers as the graph cut gives, blocks cut inside)."""
    n = max(s["last"] for s in doc["stages"])
    mid = n - 2
    return [1, mid // 2, mid - mid // 2, 1]


def _recompute_plan() -> dict[str, Any]:
    """Stages 0 and 2 (two layers each, on ranks 0 and 1) recompute: the first keeps only
    its input and runs F_ck 1, F_all 2, B 2, F_all 1, B 1; the second records nothing and
    replays its two layers at once."""
    doc = modulo_plan([0, 1, 1, 0], fwd=1, bwd=1, layers=[2, 1, 2, 1])
    seq = [("F_ck", 1), ("F_all", 2), ("B", 2), ("F_all", 1), ("B", 1)]
    doc["stages"][0]["recompute"] = {"budget_bytes": 1 << 20,
                                     "sequence": [{"op": o, "stage": k} for o, k in seq]}
    doc["stages"][2]["recompute"] = {"budget_bytes": 1 << 20, "sequence": [
        {"op": "F_all", "stage": 1}, {"op": "F_all", "stage": 2}, {"op": "B", "stage": 2},
        {"op": "B", "stage": 1}]}
    return doc


@pytest.fixture(scope="module")
def ranks(tmp_path_factory: pytest.TempPathFactory, db: Path) -> dict[str, Any]:
    gpt = _graph_plan("gpt", memory=1 << 30, algo="contiguous")
    den = _graph_plan("denoiser", memory=1 << 30, algo="contiguous")
    # A stored profile of the example's MLP at 32 samples, planned three ways.
    mlp = model_workers.example_mlp()
    x = torch.randn(32, 128)
    prof = chainplan.profile(mlp, x, loss_fn=torch.nn.functional.cross_entropy,
                             target=torch.randint(0, 10, (32,)), spread_warning=None)
    memory = {f"memory-{algo}-{mem}-{ck}": pipeline_plan(
        prof, gpus=2, memory=mem, bandwidth="1GB/s", algo=algo, checkpoint=ck, microbatches=4,
        time_limit_s=5) for algo, mem, ck in [("contiguous", "min", False),
                                              ("madpipe", "faster", False),
                                              ("contiguous", "min", True)]}
    scenarios = [
        _sc("gpt", "graph", gpt.raw, case="gpt", microbatches=4, seed=5),
        # Stage 0 (the embedding) and the head share the tied weight on rank 0.
        _sc("gpt-wave", "graph", modulo_plan([0, 1, 1, 0], layers=_wave(gpt.raw)), case="gpt",
            microbatches=4, seed=5),
        _sc("denoiser", "graph", den.raw, case="denoiser", microbatches=4, seed=None),
        _sc("recompute", "recompute", _recompute_plan(), layers=6, microbatches=4,
            dropout=0.3),
        *[_sc(name, "memory", p.raw, microbatches=4, width=128) for name, p in memory.items()],
    ]
    got = session.run(2, scenarios, tmp_path_factory.mktemp("models"), db)
    return {"got": got, "gpt": gpt, "memory": memory}


def _ok(got: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    out = [r[name] for r in got]
    for rank, g in enumerate(out):
        assert "error" not in g, f"rank {rank}: {g['error']}\n{g.get('trace', '')}"
    return out


@pytest.mark.parametrize("name", ["gpt", "gpt-wave", "denoiser"])
def test_models_as_written_match_one_process(ranks: dict[str, Any], name: str) -> None:
    got = _ok(ranks["got"], name)
    for rank, g in enumerate(got):
        assert g["grad_diff"] <= TOL and g["loss_diff"] <= TOL, (rank, g)
        assert g["params"], f"rank {rank} holds no parameter"
    if name == "gpt":
        # The tied embedding is read by the first stage (rank 0) and the head (rank 1):
        # both hold it, with the summed gradient.
        assert "wte.weight" in got[0]["params"] and "wte.weight" in got[1]["params"]
    if name == "denoiser":
        # The timestep MLP computes a side value every rank reads: its gradient is summed.
        assert all(any(p.startswith("time.") for p in g["params"]) for g in got)


def test_recomputing_stages_match_and_replay(ranks: dict[str, Any]) -> None:
    got = _ok(ranks["got"], "recompute")
    assert got[0]["recomputing"] == [0] and got[1]["recomputing"] == [2]
    for g in got:
        assert g["grad_diff"] <= 1e-6 and g["loss_diff"] <= 1e-6, g
        assert g["unseeded_grads"] > 0 and g["unseeded_diff"] <= 1e-6, g


@pytest.mark.parametrize("plan", ["memory-contiguous-min-False", "memory-madpipe-faster-False",
                                  "memory-contiguous-min-True"])
def test_measured_peak_within_the_plan(ranks: dict[str, Any], plan: str) -> None:
    got = _ok(ranks["got"], plan)[0]
    assert got["within"] and got["fits"], got
    for peak, predicted in zip(got["peaks"], got["predicted"], strict=True):
        assert peak <= predicted, got
        assert peak >= 0.8 * predicted, got  # the model is close, not a blanket bound
    p = ranks["memory"][plan]
    if plan.endswith("True"):
        assert any(s.recompute for s in p.stages), p
