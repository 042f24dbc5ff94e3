"""Reading the JSON documents of the Go side into typed values, naming the bad field.

The plan documents come from the Go planner, which validated them, but they also come from
files and from the database: a hand-edited or truncated document must be refused with the
path of the field at fault (``offload.transfers[2].after``), not with a ``KeyError`` or a
silently wrong value. This module never imports torch.
"""

from __future__ import annotations

import math
from typing import Any

from chainplan.errors import ScheduleError

__all__ = ["Fields", "same_kind"]


def same_kind(tag: str, fmt: str) -> bool:
    """Whether ``tag`` names the kind of document ``fmt`` does, in any version
    (``chainplan.pipeline/v7`` and ``chainplan.pipeline/v1``): Go's ``chainplan.SameKind``."""
    kind, sep, _ = tag.partition("/v")
    return bool(sep) and kind.startswith("chainplan.") and kind == fmt.partition("/v")[0]


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


class Fields:
    """One JSON object being read: typed getters whose errors name the field's path.

    A field that is absent takes the default when one is given, as the Go decoder gives a
    missing field its zero value; otherwise it is an error. Keys the reader does not ask
    for are ignored, so that a newer planner's additions do not break an older executor.

    Args:
        obj: the decoded JSON value that should be an object.
        where: its path in the document (``""`` for the top level).

    Raises:
        ScheduleError: ``obj`` is not an object.
    """

    def __init__(self, obj: object, where: str = "") -> None:
        if not isinstance(obj, dict):
            raise ScheduleError(f"{where or 'the document'}: want an object (got {_kind(obj)})")
        self.obj: dict[str, Any] = obj
        self.where = where

    def path(self, key: str) -> str:
        """The path of the field ``key`` of this object."""
        return f"{self.where}.{key}" if self.where else key

    def has(self, key: str) -> bool:
        """Whether the field is present (and not null)."""
        return self.obj.get(key) is not None

    def _get(self, key: str, want: str, default: object) -> object:
        value = self.obj.get(key)
        if value is None:
            if default is None:
                raise ScheduleError(f"{self.path(key)}: missing (want {want})")
            return default
        return value

    def _bad(self, key: str, want: str, value: object) -> ScheduleError:
        return ScheduleError(f"{self.path(key)}: want {want} (got {value!r})")

    def integer(self, key: str, default: int | None = None, *, low: int | None = None) -> int:
        """An integer field (not a bool, not a float), at least ``low`` when given."""
        value = self._get(key, "an integer", default)
        if not isinstance(value, int) or isinstance(value, bool):
            raise self._bad(key, "an integer", value)
        if low is not None and value < low:
            raise self._bad(key, f"an integer ≥ {low}", value)
        return value

    def number(self, key: str, default: float | None = None, *,
               positive: bool = False) -> float:
        """A finite number field (integers accepted), positive when asked."""
        value = self._get(key, "a number", default)
        if not isinstance(value, int | float) or isinstance(value, bool) \
                or not math.isfinite(value):
            raise self._bad(key, "a finite number", value)
        if positive and value <= 0:
            raise self._bad(key, "a positive number", value)
        return float(value)

    def boolean(self, key: str, default: bool | None = None) -> bool:
        """A ``true``/``false`` field."""
        value = self._get(key, "true or false", default)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false", value)
        return value

    def string(self, key: str, default: str | None = None) -> str:
        """A string field."""
        value = self._get(key, "a string", default)
        if not isinstance(value, str):
            raise self._bad(key, "a string", value)
        return value

    def format_tag(self, *want: str) -> str:
        """The document's ``format`` tag, which must be one of ``want``: the Python side of
        Go's ``chainplan.CheckFormat``, in its words, so that a document of a version this
        chainplan does not read is refused by name, before its other fields are read."""
        got = self.string("format")
        if got in want:
            return got
        msg = (f"{self.path('format')}: format {got} is not supported "
               f"(this chainplan reads {' or '.join(want)})")
        if not any(same_kind(got, w) for w in want):
            msg += "; it is another kind of document"
        raise ScheduleError(msg)

    def choice(self, key: str, choices: tuple[str, ...], default: str | None = None) -> str:
        """A string field that must be one of ``choices``."""
        value = self.string(key, default)
        if value not in choices:
            raise ScheduleError(f"{self.path(key)}: unknown value {value!r} "
                                f"(want {' or '.join(choices)})")
        return value

    def items(self, key: str) -> list[object]:
        """A list field; absent or null is the empty list (Go writes a nil slice as null)."""
        value = self.obj.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self._bad(key, "a list", value)
        return value

    def numbers(self, key: str) -> tuple[float, ...]:
        """A list of finite numbers, each named by its index when bad."""
        out = []
        for i, v in enumerate(self.items(key)):
            if not isinstance(v, int | float) or isinstance(v, bool) or not math.isfinite(v):
                raise ScheduleError(f"{self.path(key)}[{i}]: want a finite number (got {v!r})")
            out.append(float(v))
        return tuple(out)

    def integers(self, key: str) -> tuple[int, ...]:
        """A list of non-negative integers, each named by its index when bad."""
        out = []
        for i, v in enumerate(self.items(key)):
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise ScheduleError(f"{self.path(key)}[{i}]: want an integer ≥ 0 (got {v!r})")
            out.append(v)
        return tuple(out)

    def objects(self, key: str) -> list[Fields]:
        """A list of objects, each read with its path ``key[i]``."""
        return [Fields(v, f"{self.path(key)}[{i}]") for i, v in enumerate(self.items(key))]

    def object(self, key: str) -> Fields | None:
        """An object field, None when absent or null."""
        value = self.obj.get(key)
        return None if value is None else Fields(value, self.path(key))
