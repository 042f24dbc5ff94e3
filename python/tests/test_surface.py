"""The public surface (issue 37): a small top level for a training script, a namespace per
family, and the old top-level names of the families still read, with a warning naming the
new home (for one release)."""

from __future__ import annotations

import subprocess
import sys

import pytest

import chainplan


def test_the_top_level_is_what_a_training_script_needs() -> None:
    assert len(chainplan.__all__) <= 12, chainplan.__all__
    for name in ("profile", "record", "plan", "measure", "query", "Checkpointed", "WithLoss",
                 "ChainplanError", "InfeasibleBudget"):
        assert name in chainplan.__all__, name
        assert getattr(chainplan, name) is not None
    assert not set(chainplan.__all__) & set(chainplan.MOVED)


@pytest.mark.parametrize(("old", "new"), sorted(chainplan.MOVED.items()))
def test_an_old_name_reads_the_same_object_and_warns_with_its_home(old: str, new: str) -> None:
    home, _, attr = new.rpartition(".")
    target = getattr(sys.modules.get(home) or __import__(home, fromlist=[attr]), attr)
    with pytest.warns(DeprecationWarning, match=f"chainplan.{old} is now {new}") as caught:
        value = getattr(chainplan, old)
    assert value is target
    # The warning names the reader's line (this file), not chainplan's lazy loader.
    assert caught[0].filename == __file__, caught[0].filename
    # Every read warns: the old name is never cached as a plain attribute.
    with pytest.warns(DeprecationWarning):
        getattr(chainplan, old)


def test_the_families_are_namespaces_read_without_a_warning() -> None:
    code = ("import warnings; warnings.simplefilter('error')\n"
            "import chainplan\n"
            "fs = [chainplan.pipeline.pipesim, chainplan.pipeline.pipeline_plan,\n"
            "      chainplan.pipeline.PipelinePlan, chainplan.parallel.advise,\n"
            "      chainplan.parallel.search3d, chainplan.parallel.Advice,\n"
            "      chainplan.parallel.Search3D, chainplan.tradeoff.frontier,\n"
            "      chainplan.tradeoff.min_budget, chainplan.tradeoff.plot_frontier,\n"
            "      chainplan.history.runs, chainplan.history.plot_history,\n"
            "      chainplan.reuse.find_profile, chainplan.towers, chainplan.offloading]\n"
            "print(all(f is not None for f in fs), sorted(set(dir(chainplan)) & "
            "{'pipeline', 'parallel', 'tradeoff'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["True", "['parallel',", "'pipeline',", "'tradeoff']"], out.stdout


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = chainplan.nope  # type: ignore[attr-defined]
