"""The one exception a verb raises to stop with a message, and the exit codes the command line keeps."""

from __future__ import annotations

#: The tool ran and answered ``isError``.
TOOL_ERROR = 1
#: A usage, protocol or connection error: the call did not happen (argparse exits 2 on usage too).
FAILED = 2


class CLIError(Exception):
    """Stop the command with ``message`` on stderr and exit ``code``; the message says what to do."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code
