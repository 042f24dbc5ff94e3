"""chainplan's version, ``chainplan.__version__``: the installed distribution's, which
``pyproject.toml``'s ``version`` sets, the one source (the Go side's ``chainplan.Version``,
recorded with every plan, is tested equal to it: version_test.go). Read from the package
metadata, so that ``import chainplan`` stays light.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["__version__"]

try:
    __version__ = version("chainplan")
except PackageNotFoundError:  # a source tree on sys.path that pip never installed
    # The Go extension carries the same version (pybind.Version, from version.go).
    from chainplan import _bind

    __version__ = _bind.version()
