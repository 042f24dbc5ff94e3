"""The example chains are what examples/tools/pipedream2chain.py makes of the shared
PipeDream profiles (testdata/pipedream), byte for byte, and bad profiles are refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / "examples" / "tools" / "pipedream2chain.py"


def convert(profile: Path, out: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(TOOL), str(profile), "-o", str(out)],
                          capture_output=True, text=True, check=False)


@pytest.mark.parametrize("model", ["vgg16", "resnet50", "densenet121"])
def test_example_chains_are_the_converters_output(model: str, tmp_path: Path) -> None:
    out = tmp_path / f"{model}.json"
    done = convert(ROOT / "testdata" / "pipedream" / f"{model}.graph.txt", out)
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == (ROOT / "examples" / f"{model}.json").read_bytes()


def test_bad_profiles_are_refused_with_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.graph.txt"
    bad.write_text("node1 -- Input -- forward_compute_time=-1.0, backward_compute_time=0.0, "
                   "activation_size=4.0, parameter_size=0.0\n")
    done = convert(bad, tmp_path / "out.json")
    assert done.returncode != 0
    assert "bad.graph.txt:1: forward_compute_time must be finite and >= 0" in done.stderr
    bad.write_text("node1 -- node9\n")
    done = convert(bad, tmp_path / "out.json")
    assert "names unknown node" in done.stderr
