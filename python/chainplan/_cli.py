"""The ``chainplan`` console script: runs the Go CLI built into the package."""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__: list[str] = []


def binary() -> Path:
    """Return the path of the bundled ``chainplan`` executable."""
    return Path(__file__).resolve().parent / "bin" / "chainplan"


def main() -> None:
    exe = binary()
    if not exe.exists():
        sys.exit(f"chainplan: the CLI binary is missing ({exe}); reinstall the package "
                 "with `pip install .` so that it is built")
    os.execv(exe, [str(exe), *sys.argv[1:]])
