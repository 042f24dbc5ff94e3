"""Public names imported on first use (PEP 562), for the packages whose ``__init__`` must
load without torch: ``chainplan`` and ``chainplan.pipeline``."""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: dict[str, str], namespace: dict[str, Any], *,
               submodules: tuple[str, ...] = (), moved: Mapping[str, str] | None = None,
               ) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``.

    A name in ``where`` is imported from its module when first read, then kept in
    ``namespace`` (the package's globals) so later reads are plain lookups; a name in
    ``submodules`` is the subpackage or module of that name (``chainplan.pipeline``),
    imported on first read. A name in
    ``moved`` (old name → its new home, ``"chainplan.pipeline.pipesim"``) still reads the
    same object, with a :class:`DeprecationWarning` naming the new home at every read
    (never cached, so every caller is told) and attributed to the reader's line.
    """

    def getattr_(name: str) -> Any:
        new = (moved or {}).get(name)
        if new is not None:
            home, _, attr = new.rpartition(".")
            warnings.warn(f"{package}.{name} is now {new}; use that ({package}.{name} will "
                          "be removed)", DeprecationWarning, stacklevel=2)
            return getattr(importlib.import_module(home), attr)
        if name in submodules:
            value = importlib.import_module(f"{package}.{name}")
            namespace[name] = value
            return value
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return sorted(set(namespace) | set(where) | set(submodules))

    return getattr_, dir_
