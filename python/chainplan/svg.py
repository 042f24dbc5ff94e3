"""SVG pictures from Python: where every ``plot`` method writes its picture, and what a
notebook's ``_repr_svg_`` shows when a picture cannot be drawn.

The pictures themselves are drawn by the Go side (``internal/plot``); this module only
handles the result, so that the plan documents (:mod:`chainplan.schedule`,
:mod:`chainplan.pipeline.plan`) and the planning functions share it without importing each
other.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from chainplan.errors import ChainplanError, PlanError

__all__ = ["svg_or_none", "write_svg"]


def write_svg(path: str | os.PathLike[str] | None, svg: str) -> str:
    """Write an SVG document to ``path`` when it is given (a ``.svg`` file), and return
    the document: the ``path`` argument of every ``plot`` method.

    Raises:
        PlanError: another extension (PNG comes from ``chainplan plot``), or the file cannot
            be written.
    """
    if path is None:
        return svg
    p = Path(path)
    if p.suffix.lower() != ".svg":
        raise PlanError(f"path {str(path)!r}: pictures from Python are SVG; name a .svg file "
                        f"(for PNG use chainplan plot ... -o FILE.png)")
    try:
        p.write_text(svg, encoding="utf-8")
    except OSError as e:
        raise PlanError(f"cannot write {str(path)!r}: {e.strerror}") from e
    return svg


def svg_or_none(draw: Callable[[], str]) -> str | None:
    """The SVG ``draw`` returns, or None when it raises a :class:`ChainplanError`: what a
    ``_repr_svg_`` returns, so that a notebook shows the text repr of what cannot be drawn.
    """
    try:
        return draw()
    except ChainplanError:
        return None
