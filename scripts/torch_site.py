"""Link torch and everything it needs from this environment into one site folder.

`make wheel-check` installs the built wheel into a fresh virtual environment. Downloading
torch there again would cost minutes and gigabytes on every run (docs/RELEASE.md), so the
fresh environment reads torch and its dependencies (and nothing else) from the project's
through a .pth file pointing at the folder this script fills: pip then sees torch as
installed and installs chainplan and its other dependencies itself, as a user's pip would.

Usage: python scripts/torch_site.py OUT_DIR   (run with the project's interpreter)
"""

from __future__ import annotations

import importlib.metadata as md
import sys
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name


def closure(root: str) -> dict[str, md.Distribution]:
    """The installed distributions ``root`` needs, itself included, by canonical name."""
    env = default_environment()
    found: dict[str, md.Distribution] = {}
    todo: list[tuple[str, frozenset[str]]] = [(root, frozenset())]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue  # an optional dependency that is not installed here
        found[canonicalize_name(name)] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            wanted = req.marker is None or any(
                req.marker.evaluate({**env, "extra": extra}) for extra in ("", *extras))
            if wanted:
                todo.append((canonicalize_name(req.name), frozenset(req.extras)))
    return found


def top_levels(dist: md.Distribution) -> set[Path]:
    """The files and folders directly in the site folder that ``dist`` installed."""
    out: set[Path] = set()
    for f in dist.files or []:
        parts = Path(str(f)).parts
        if parts and parts[0] not in ("..", "__pycache__") and not parts[0].endswith(".pth"):
            out.add(Path(str(dist.locate_file(parts[0]))))
    return out


def main() -> None:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    dists = closure("torch")
    if "torch" not in dists:
        sys.exit("torch_site: torch is not installed in this environment (make venv)")
    for dist in dists.values():
        for src in top_levels(dist):
            link = out / src.name
            if src.exists() and not link.exists():
                link.symlink_to(src)
    print(f"torch_site: {len(dists)} distributions linked into {out}: "
          + ", ".join(sorted(dists)))


if __name__ == "__main__":
    main()
