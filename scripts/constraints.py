"""The pinned test environment: write constraints.txt from an environment, or say how an
environment differs from it.

``make venv`` installs the test environment under ``constraints.txt`` (every package, the
dependencies of dependencies included, at one version), so that a commit tests against
the same torch, transformers, timm and torchvision whatever the day. Updating it is a
deliberate step (``make constraints``); ``make test-latest`` runs the suite against the
newest versions of the day and prints what moved (``diff``).

Usage:
    python scripts/constraints.py write PYTHON [OUT]   # pin what PYTHON's environment has
    python scripts/constraints.py diff PYTHON [PINS]   # what PYTHON's environment changes
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEADER = """\
# The pinned test environment (docs/TESTING.md, "The pinned environment"). `make venv`, and so
# `make test` and CI, install every Python package under these versions. Update deliberately:
# `make constraints` re-pins to the newest versions of the day (review the diff it prints, run
# `make test`, and say what moved in the commit); `make test-latest` tries them first.
# Python {python}, written by scripts/constraints.py.
"""


def installed(python: str) -> dict[str, str]:
    """The distributions of `python`'s environment, name (normalised) to version, without
    chainplan itself (installed editable from this tree)."""
    out = subprocess.run([python, "-m", "pip", "list", "--format=freeze",
                          "--exclude-editable", "--disable-pip-version-check"],
                         check=True, capture_output=True, text=True).stdout
    pins = {}
    for line in out.splitlines():
        name, sep, version = line.partition("==")
        if sep:
            pins[normal(name)] = version
    pins.pop("chainplan", None)
    return pins


def normal(name: str) -> str:
    """A distribution name as PEP 503 compares them."""
    return name.strip().lower().replace("_", "-").replace(".", "-")


def read(path: Path) -> dict[str, str]:
    pins = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        name, sep, version = line.partition("==")
        if not sep:
            sys.exit(f"{path}: {raw!r} is not NAME==VERSION")
        pins[normal(name)] = version.strip()
    return pins


def write(python: str, out: Path) -> None:
    pins = installed(python)
    version = subprocess.run([python, "-c", "import sys; print(sys.version.split()[0])"],
                             check=True, capture_output=True, text=True).stdout.strip()
    body = "".join(f"{name}=={pins[name]}\n" for name in sorted(pins))
    out.write_text(HEADER.format(python=version) + body)
    print(f"constraints: {len(pins)} packages pinned in {out}")


def diff(python: str, path: Path) -> None:
    pinned, now = read(path), installed(python)
    moved = [(n, pinned[n], now[n]) for n in sorted(pinned.keys() & now.keys())
             if pinned[n] != now[n]]
    added = sorted(now.keys() - pinned.keys())
    dropped = sorted(pinned.keys() - now.keys())
    if not (moved or added or dropped):
        print(f"constraints: the newest versions are the pinned ones ({len(pinned)} packages)")
        return
    print(f"constraints: against {path.name}, the newest versions of the day differ in "
          f"{len(moved) + len(added) + len(dropped)} packages:")
    for name, old, new in moved:
        print(f"  {name}: {old} -> {new}")
    for name in added:
        print(f"  {name}: (not pinned) -> {now[name]}")
    for name in dropped:
        print(f"  {name}: {pinned[name]} -> (no longer installed)")


def main(argv: list[str]) -> None:
    if len(argv) not in (2, 3) or argv[0] not in ("write", "diff"):
        sys.exit(__doc__)
    path = Path(argv[2]) if len(argv) == 3 else ROOT / "constraints.txt"
    (write if argv[0] == "write" else diff)(argv[1], path)


if __name__ == "__main__":
    main(sys.argv[1:])
