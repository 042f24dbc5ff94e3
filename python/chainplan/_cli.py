"""The ``chainplan`` console script: the Go CLI, run in this process by the extension.

The wheel carries one Go runtime, the gopy extension ``chainplan._gocore``; the command line
is its ``pybind.RunCLI`` (the same commands as the standalone ``cmd/chainplan`` program),
so the script and ``import chainplan`` share it and plan with the same HiGHS program
(chainplan._highs). This module never imports torch.
"""

from __future__ import annotations

import signal
import sys

from chainplan import _bind
from chainplan.errors import ChainplanError

__all__: list[str] = []


def main() -> None:
    # The process runs nothing but the command: let Ctrl-C and a closed pipe
    # (`chainplan sql ... | head`) end it as they end any command-line program, instead
    # of waiting for Go to return (SIGINT) or failing a write with EPIPE (SIGPIPE, which
    # Python ignores and Go, loaded as a library, leaves alone).
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)

    try:
        status = _bind.run_cli(sys.argv[1:])
    except ChainplanError as err:
        sys.exit(f"chainplan: {err}")
    sys.exit(status)
