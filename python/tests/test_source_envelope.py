"""One source envelope (issue 37): a Profile, a run id or a path becomes the envelope Go
resolves (``service.Resolve``) in one module, :mod:`chainplan.source`, and no chain goes
Go → Python → Go.

Before, six modules each branched on the source's type (``api``, ``tradeoff``,
``pipeline.requests``, ``simulating``, ``parallel``, ``arguments``), and an unstored
Profile's chain crossed into Python and back in four places (``pipeline_plan``,
``pipesim``, the frontier calls, ``Profile._repr_svg_``): ``ProfileChain`` or
``ExportChain`` out, then the chain's text into ``PipelineSolve``, ``Pipesim``,
``Frontier``, ``MinBudget`` or ``PlotFrontier``.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import chainplan
from chainplan import _bind
from chainplan.pipeline import pipeline_plan, pipesim

PACKAGE = Path(chainplan.__file__).resolve().parent

#: The types that name a source's kind; a check against one of them is a dispatch on the
#: source. A check of the model itself (``nn.Module``, profiled first, in Python) is not.
_SOURCE_TYPES = {"Profile", "Profiled", "int", "str", "PathLike"}


def _names(node: ast.expr) -> set[str]:
    """The type names an isinstance's second argument mentions (``os.PathLike`` →
    ``PathLike``, a tuple or a union each of its members)."""
    return {n.id if isinstance(n, ast.Name) else n.attr for n in ast.walk(node)
            if isinstance(n, ast.Name | ast.Attribute)}


def dispatch_sites(package: Path) -> dict[str, list[int]]:
    """The modules of ``package`` that look at a source's type, with the lines: an
    ``isinstance`` of a variable named ``source`` against a source type, any ``isinstance``
    against ``Profile``, and a ``hasattr(source, ...)`` (a Profile read by its attributes,
    which the modules that avoided importing torch did)."""
    sites: dict[str, list[int]] = {}
    for path in sorted(package.rglob("*.py")):
        if "_gocore" in path.parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in ("isinstance", "hasattr") and len(node.args) == 2):
                continue
            subject, kind = node.args
            on_source = isinstance(subject, ast.Name) and subject.id == "source"
            if node.func.id == "hasattr":
                hit = on_source
            else:
                names = _names(kind)
                hit = "Profile" in names or "Profiled" in names or (
                    on_source and bool(names & _SOURCE_TYPES))
            if hit:
                sites.setdefault(str(path.relative_to(package.parent)), []).append(node.lineno)
    return sites


def test_one_module_dispatches_on_the_source() -> None:
    sites = dispatch_sites(PACKAGE)
    assert list(sites) == ["chainplan/source.py"], sites


def test_the_count_sees_a_dispatch(tmp_path: Path) -> None:
    # The rule finds what the six modules wrote before (and so fails on a seventh).
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("def f(source):\n"
                              "    return isinstance(source, (str, os.PathLike))\n")
    (pkg / "b.py").write_text("def g(x):\n    return isinstance(x, Profile) and x.run_id\n")
    (pkg / "c.py").write_text("def h(source):\n    return hasattr(source, 'run_id')\n")
    (pkg / "d.py").write_text("def m(source):\n    return isinstance(source, nn.Module)\n")
    assert sorted(dispatch_sites(pkg)) == ["pkg/a.py", "pkg/b.py", "pkg/c.py"]


class _Recording:
    """The gopy module, with every call into it written down: its name, its arguments
    and what it returned."""

    def __init__(self, module: Any) -> None:
        self._module = module
        self.calls: list[tuple[str, tuple[Any, ...], Any]] = []

    def __getattr__(self, name: str) -> Callable[..., Any]:
        fn = getattr(self._module, name)

        def crossing(*args: Any) -> Any:
            out = fn(*args)
            self.calls.append((name, args, out))
            return out
        return crossing

    def names(self) -> list[str]:
        return [name for name, _, _ in self.calls]

    def round_trips(self) -> list[str]:
        """The calls that sent Go a chain an earlier call had returned (its stages, however
        they were encoded on the way)."""
        sent_back: list[str] = []
        seen: set[str] = set()
        for name, args, out in self.calls:
            if any(stages in seen for a in args for stages in _chains_in(a)):
                sent_back.append(name)
            seen.update(_chains_in(out))
        return sent_back


def _chains_in(value: Any) -> list[str]:
    """The stage lists of the chain documents in a value crossing (a JSON text, at any
    depth, chains given as objects or as their text), each normalized to one spelling."""
    found: list[str] = []

    def walk(doc: Any) -> None:
        if isinstance(doc, str) and doc.lstrip().startswith(("{", "[")):
            try:
                doc = json.loads(doc)
            except ValueError:
                return
        if isinstance(doc, dict):
            if str(doc.get("format", "")).startswith("chainplan.chain/v"):
                found.append(json.dumps(doc.get("stages"), sort_keys=True))
            for v in doc.values():
                walk(v)
        elif isinstance(doc, list):
            for v in doc:
                walk(v)
    walk(value)
    return found


@pytest.fixture
def go(monkeypatch: pytest.MonkeyPatch) -> Iterator[_Recording]:
    recording = _Recording(_bind._go())
    monkeypatch.setattr(_bind, "_module", recording)
    yield recording


def _profile(*, ingest: bool) -> chainplan.Profile:
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.ReLU(),
                          nn.Linear(16, 4))
    return chainplan.profile(model, torch.randn(3, 8), repeats=1, warmup=0, progress=False,
                             spread_warning=None, ingest=ingest)


def test_the_bindings_that_sent_chains_back_are_gone() -> None:
    go = _bind._go()
    for gone in ("ProfileChain", "ExportChain", "PipelineSolve", "PipelineSolveRun",
                 "PipesimRun"):
        assert not hasattr(go, gone), gone


@pytest.mark.parametrize("ingest", [False, True], ids=["file", "stored"])
def test_no_chain_crosses_back(go: _Recording, ingest: bool) -> None:
    prof = _profile(ingest=ingest)
    _bind.use_highs()
    chainplan.tradeoff.min_budget(prof)  # the registry, read once per process, too
    go.calls.clear()
    families: dict[str, Callable[[], object]] = {
        "Plan": lambda: chainplan.plan(prof, budget="min"),
        "Frontier": lambda: chainplan.tradeoff.frontier(prof),
        "MinBudget": lambda: chainplan.tradeoff.min_budget(prof),
        "PlotFrontier": lambda: chainplan.tradeoff.plot_frontier(prof),
        "Pipeline": lambda: pipeline_plan(prof, gpus=2, memory="min", bandwidth="1GB/s",
                                          algo="contiguous"),
        "Pipesim": lambda: pipesim(prof, schedule="gpipe", stages=2, microbatches=2),
    }
    for name, family in families.items():
        go.calls.clear()
        family()
        # One crossing, whose envelope names the source; never the chain itself.
        assert go.names() == [name], (name, go.names())
        sent = json.loads(go.calls[0][1][0])["source"]
        if ingest:
            assert sent == {"run_id": prof.run_id, **_bind.database()}, sent
        else:
            assert sent == {"profile_path": str(prof.path)}, sent

    go.calls.clear()
    plan = chainplan.plan(prof, budget="min")
    assert prof._repr_svg_() is not None and plan.plot().startswith("<?xml")
    json.loads(prof.chain_json())  # read in Python, for the user: Go → Python only
    assert go.names()[:2] == ["Plan", "PlotFrontier"]
    assert go.round_trips() == [], go.names()


def test_a_chain_read_in_python_and_sent_back_is_seen(go: _Recording) -> None:
    # What the check above would catch: the old road, Go's chain resent as a document.
    prof = _profile(ingest=False)
    go.calls.clear()
    text = prof.chain_json()
    _bind.min_budget({"chain": text}, {"algo": "rotor"})
    assert go.round_trips() == ["MinBudget"]
