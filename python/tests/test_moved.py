"""The old module paths and names of the issue-22 renames still work, and warn with the new
name (a user's import of the old path, not chainplan's own code, is what the warning names)."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

# (old module, new module, names the old path keeps giving)
MOVED = [
    ("chainplan.pipeline.planning", "chainplan.pipeline.requests", ("pipeline_plan", "load_plan")),
    ("chainplan.pipeline.block", "chainplan.pipeline.stagemodule",
     ("StageModule", "MicrobatchContext", "contiguous_grad", "layer_seed", "run_layers")),
    ("chainplan.profiler.measure", "chainplan.profiler.stagemeasure",
     ("StageMeasurement", "measure_stage", "time_stage")),
]


@pytest.mark.parametrize(("old", "new", "names"), MOVED)
def test_old_path_imports_the_same_objects_and_warns(old: str, new: str,
                                                     names: tuple[str, ...]) -> None:
    sys.modules.pop(old, None)
    with pytest.warns(DeprecationWarning, match=f"{old} moved to {new}") as caught:
        __import__(old)  # as an import statement does: no importlib frame of its own
    shim = sys.modules[old]
    # The warning names this file (the import), not the shim or the import machinery.
    assert any(w.filename == __file__ for w in caught), [w.filename for w in caught]
    target = importlib.import_module(new)
    for name in names:
        assert getattr(shim, name) is getattr(target, name), name


def test_old_class_name_is_the_new_class() -> None:
    sys.modules.pop("chainplan.pipeline.block", None)
    with pytest.warns(DeprecationWarning):
        from chainplan.pipeline.block import StageBlock
    from chainplan.pipeline.stagemodule import StageModule
    assert StageBlock is StageModule


def test_old_recomputing_class_name_warns() -> None:
    from chainplan.pipeline import recompute

    with pytest.warns(DeprecationWarning, match="RecomputingBlock is renamed") as caught:
        old = recompute.RecomputingBlock
    assert old is recompute.RecomputingStageModule
    assert caught[0].filename == __file__
    with pytest.raises(AttributeError, match="no attribute 'Nope'"):
        _ = recompute.Nope  # type: ignore[attr-defined]


def test_chainplan_code_never_imports_an_old_path() -> None:
    # A fresh interpreter that turns the warning into an error: importing everything the
    # package offers must not go through a shim.
    code = ("import warnings; warnings.simplefilter('error', DeprecationWarning)\n"
            "import chainplan, chainplan.pipeline\n"
            "for n in chainplan.__all__: getattr(chainplan, n)\n"
            "for n in chainplan.pipeline.__all__: getattr(chainplan.pipeline, n)\n"
            "import chainplan.profiler.run, chainplan.towers.profile, chainplan.pipeline.runner\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)


def test_runner_blocks_is_stage_modules_and_warns() -> None:
    from chainplan.pipeline.runner import PipelineRunner

    runner = PipelineRunner.__new__(PipelineRunner)  # the alias needs no process group
    runner.stage_modules = {}
    with pytest.warns(DeprecationWarning, match="PipelineRunner.blocks is renamed "
                                                "PipelineRunner.stage_modules") as caught:
        got = runner.blocks
    assert got is runner.stage_modules
    assert caught[0].filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert runner.stage_modules is got
