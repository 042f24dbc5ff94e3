"""A profile's name is a label, never a path (issue 33, point 1): profile(), record(), the
towers' profile and Checkpointed refuse a name that cannot name one file in the profile
folder, before measuring, and write nothing anywhere; the names they accept are kept as
given, in the database and in the file name, inside the profile folder. (Issue 20 had
profile() rewrite such names into safe file names; the other three wrote them as paths.)"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import torch
from torch import nn

import chainplan
from chainplan.errors import ProfileError
from chainplan.profiler.filename import MAX_NAME_BYTES
from tests.towers.models import DualEncoder, dual_batch

QUICK: dict[str, Any] = {"repeats": 1, "warmup": 0, "progress": False, "spread_warning": None}


def _chain() -> nn.Sequential:
    return nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2))


def _profile(name: object) -> Path:
    prof = chainplan.profile(_chain(), torch.randn(3, 4), name=name, **QUICK)  # type: ignore[arg-type]
    return prof.path


def _record(name: object) -> Path:
    model = _chain()
    with chainplan.record(model, name=name, spread_warning=None) as rec:  # type: ignore[arg-type]
        for _ in range(3):
            model(torch.randn(3, 4)).sum().backward()
    assert rec.profile is not None
    return rec.profile.path


def _towers(name: object) -> Path:
    model = DualEncoder(width=16, image_blocks=1, text_blocks=1)
    images, tokens = dual_batch(4)
    prof = chainplan.profile(model, images, tokens, name=name, **QUICK)  # type: ignore[arg-type]
    assert type(prof).__name__ == "TowersProfile"
    return prof.path


def _checkpointed(name: object) -> Path:
    net = chainplan.Checkpointed(_chain(), budget="min", name=name,  # type: ignore[arg-type]
                                 repeats=1, warmup=0)
    net(torch.randn(3, 4)).sum().backward()
    run = chainplan.history.runs()[-1]
    return Path(str(run["source_path"]))


ENTRIES: dict[str, Callable[[object], Path]] = {
    "profile": _profile, "record": _record, "towers": _towers, "checkpointed": _checkpointed}


def _tree(root: Path) -> set[Path]:
    return set(root.rglob("*"))


@contextlib.contextmanager
def _writes_nothing(root: Path) -> Iterator[None]:
    """Asserts that the block adds no file and no folder under ``root`` (the database's
    folder, where profiles/ is, and every path the names below aim at)."""
    before = _tree(root)
    yield
    assert _tree(root) == before


BAD = {  # name -> what the refusal says
    "../escape": "holds '/'",
    "sub/dir": "holds '/'",
    "a\\b": "holds '\\\\'",
    "..": "names a folder",
    ".": "names a folder",
    ".hidden": "starts with '.'",
    "-rf": "starts with '-'",
    "nul\x00name": "control character (U+0000)",
    "tab\tname": "control character (U+0009)",
    "two\nlines": "control character (U+000A)",
    "\x1b[31mred": "control character (U+001B)",
    "gnp\u202eexe.arrow": "invisible formatting character (U+202E)",
    "zero\u200bwidth": "invisible formatting character (U+200B)",
    "lone\udc80surrogate": "surrogate character (U+DC80)",
    "": "is empty",
    " padded": "white space",
    "padded ": "white space",
    "x" * (MAX_NAME_BYTES + 1): f"over the {MAX_NAME_BYTES}",
    "é" * (MAX_NAME_BYTES // 2 + 1): f"is {MAX_NAME_BYTES + 2} bytes long in UTF-8",
}


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("name", list(BAD), ids=[repr(n)[:24] for n in BAD])
def test_a_name_that_cannot_name_a_file_is_refused(entry: str, name: str, tmp_path: Path,
                                                   private_db: Path) -> None:
    """Before the fix record() wrote profiles/../escape-record-….arrow, the towers'
    profile profiles/../escape-….arrow, and a NUL made pyarrow raise ArrowInvalid."""
    with _writes_nothing(tmp_path), pytest.raises(ProfileError) as err:
        ENTRIES[entry](name)
    assert BAD[name] in str(err.value)
    assert repr(name)[:40] in str(err.value) or len(name) > 60  # the label is quoted


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_an_absolute_name_creates_no_folder(entry: str, tmp_path: Path,
                                            private_db: Path) -> None:
    """Before the fix record(name="/some/dir/evil") wrote /some/dir/evil-record-….arrow,
    creating the folder."""
    evil = tmp_path / "some" / "dir" / "evil"
    with _writes_nothing(tmp_path), pytest.raises(ProfileError, match="not a path"):
        ENTRIES[entry](str(evil))
    assert not (tmp_path / "some").exists()


@pytest.mark.parametrize("entry", ["profile", "record"])
@pytest.mark.parametrize("name", [5, b"bytes"])
def test_a_name_that_is_not_a_string_is_refused(entry: str, name: object,
                                                tmp_path: Path) -> None:
    with _writes_nothing(tmp_path), pytest.raises(ProfileError, match="must be a string"):
        ENTRIES[entry](name)


def test_the_refusal_suggests_a_label() -> None:
    """A HuggingFace model id is a natural name: the message says what to pass instead."""
    with pytest.raises(ProfileError, match="for example 'Qwen_Qwen2-0.5B'"):
        _profile("Qwen/Qwen2-0.5B")


GOOD = ["resnet-50", "GPT 2 small", "模型", "a<b>c|d", "v1.2_final", "x" * MAX_NAME_BYTES,
        "é" * (MAX_NAME_BYTES // 2)]


@pytest.mark.parametrize("entry", list(ENTRIES))
@pytest.mark.parametrize("name", GOOD, ids=[n[:12] for n in GOOD])
def test_a_label_is_kept_and_its_file_is_in_the_profile_folder(entry: str, name: str,
                                                               private_db: Path) -> None:
    path = ENTRIES[entry](name)
    assert path.parent == private_db.parent / "profiles"
    assert path.name.startswith(name + "-") and path.suffix == ".arrow"
    assert len(path.name.encode()) <= 255
    stored = chainplan.query("SELECT model_name FROM runs ORDER BY run_id").to_pylist()
    assert stored[-1] == {"model_name": name}


def test_each_kind_of_profile_says_what_it_is(private_db: Path) -> None:
    """``<name>-<time>-<pid>.arrow``, ``<name>-record-…`` and ``<name>-towers-…``."""
    assert _record("m").name.startswith("m-record-")
    assert _towers("m").name.startswith("m-towers-")
    assert _profile("m").name[2].isdigit()


def test_the_class_name_is_the_default(private_db: Path) -> None:
    assert _profile(None).name.startswith("Sequential-")
    odd = type("Odd/Model", (nn.Sequential,), {})(nn.Linear(4, 4))
    with pytest.raises(ProfileError, match="class name 'Odd/Model'.*pass name="):
        chainplan.profile(odd, torch.randn(3, 4), **QUICK)


def test_a_path_still_writes_where_it_says(tmp_path: Path) -> None:
    """path= is a path (the caller's choice); the name stays a label."""
    target = tmp_path / "elsewhere" / "mine.arrow"
    prof = chainplan.profile(_chain(), torch.randn(3, 4), name="mine", path=target, **QUICK)
    assert prof.path == target and target.exists()
    with pytest.raises(ProfileError, match="holds '/'"):
        chainplan.profile(_chain(), torch.randn(3, 4), name="a/b", path=target, **QUICK)
