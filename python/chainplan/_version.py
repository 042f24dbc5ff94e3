"""chainplan's version, ``chainplan.__version__``: the installed distribution's, which
``pyproject.toml``'s ``version`` sets, the one source (the Go side's ``chainplan.Version``,
recorded with every plan, is tested equal to it: version_test.go). Read from the package
metadata; a source tree on ``sys.path`` that pip never installed has none, and takes the
Go extension's.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

from chainplan import _bind

__all__ = ["__version__"]

try:
    __version__ = version("chainplan")
except PackageNotFoundError:
    __version__ = _bind.version()
