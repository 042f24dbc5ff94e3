"""Profile.summary() (the stage table) and the short Profile repr."""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

import chainplan
from chainplan.profiler.run import Profile
from chainplan.profiler.summary import format_bytes, stage_table
from chainplan.schema import ProfileRow


def rows() -> list[ProfileRow]:
    """Two stages over three repetitions (one slow outlier each) and the loss."""
    out = []
    for rep, (f, b) in enumerate([(0.001, 0.002), (0.003, 0.004), (0.100, 0.200)]):
        out.append(ProfileRow(1, "enc.0:Linear", rep, f, b, 512, 1536, 3 << 20, 0, 1024, 4096))
        out.append(ProfileRow(2, "head:Linear", rep, f, b, 1536, 40, 40 + rep, 8, 16, 2048))
    out.append(ProfileRow(3, "CrossEntropyLoss", 0, 0.0005, 0.0007, 40, 0, 0, 4, 4, 0,
                          stage_kind="loss"))
    return out


def test_format_bytes() -> None:
    assert [format_bytes(n) for n in (0, 1023, 1536, 3 << 20, 5 << 30, None)] == [
        "0 B", "1023 B", "1.50 KiB", "3.00 MiB", "5.00 GiB", "-"]


def test_stage_table_aggregates_like_the_planner() -> None:
    lines = stage_table(rows()).splitlines()
    assert len(lines) == 1 + 3 + 2  # header, two stages and the loss, rule and totals
    assert lines[0].split() == ["#", "stage", "fwd", "ms", "bwd", "ms", "out", "saved",
                                "fwd_tmp", "bwd_tmp", "param"]
    # Medians over the repetitions (the 100 ms outlier does not show), sizes in IEC units;
    # a size that varies takes the upper median, as profiler/aggregate.go does.
    assert lines[1].split() == ["1", "enc.0:Linear", "3.000", "4.000", "1.50", "KiB", "3.00",
                                "MiB", "0", "B", "1.00", "KiB", "4.00", "KiB"]
    assert lines[2].split()[:7] == ["2", "head:Linear", "3.000", "4.000", "40", "B", "41"]
    assert lines[3].split()[:5] == ["3", "loss:", "CrossEntropyLoss", "0.500", "0.700"]
    assert set(lines[4]) == {"-"}
    # Totals: the times of every stage and the loss; the stages' saved and param sizes.
    assert lines[5].split() == ["total", "6.500", "8.700", "3.00", "MiB", "6.00", "KiB"]


def test_unmeasured_sizes_show_as_dashes() -> None:
    """A profile recorded during training (chainplan.record) has no saved sizes."""
    recorded = [ProfileRow(1, "0:Linear", 0, 0.001, 0.002, 8, 8, None, None, None, 16),
                ProfileRow(2, "none", 0, 0.0, 0.0, 8, 0, 0, 0, 0, 0, stage_kind="loss")]
    lines = stage_table(recorded).splitlines()
    assert lines[1].split()[4:] == ["8", "B", "-", "-", "-", "16", "B"]
    assert lines[-1].split() == ["total", "1.000", "2.000", "-", "16", "B"]


def test_summary_and_repr_of_a_profile() -> None:
    model = nn.Sequential(nn.Sequential(nn.Linear(6, 12), nn.ReLU()), nn.Linear(12, 3))
    x, y = torch.randn(5, 6), torch.randint(0, 3, (5,))
    prof = chainplan.profile(model, x, loss_fn=nn.CrossEntropyLoss(), target=y, repeats=2,
                             warmup=1, progress=False, name="mlp")
    text = prof.summary().splitlines()
    assert text[0].startswith(f"Profile of 'mlp': 3 stages + loss, run {prof.run_id}, input 120 B")
    assert len(text) == 2 + prof.num_stages + 1 + 2
    # One line per stage, in order, named with its module path.
    for k, name in enumerate(prof.stage_names, start=1):
        assert text[1 + k].split()[:2] == [str(k), name]
    assert prof.stage_names[:2] == ("0.0:Linear", "0.1:ReLU")
    assert text[1 + prof.num_stages + 1].split()[:3] == ["4", "loss:", "CrossEntropyLoss"]
    assert text[-1].split()[0] == "total"

    r = repr(prof)
    assert r == (f"Profile(model='mlp', stages=3, run_id={prof.run_id}, "
                 f"path='…/{prof.path.name}')")
    assert "ProfileRow" not in r and len(r) < 200


def test_repr_without_folder_or_run() -> None:
    prof = Profile(path=Path("x.arrow"), run_id=None, model_name="m", stage_names=("a",),
                   rows=tuple(rows()), seconds=0.0)
    assert repr(prof) == "Profile(model='m', stages=1, run_id=None, path='x.arrow')"
    assert prof.summary().splitlines()[0] == (
        "Profile of 'm': 1 stage + loss, not stored, input 512 B, x.arrow")
