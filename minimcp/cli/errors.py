"""The one exception a verb raises to stop with a message, the exit codes the command line keeps, and
the reading of JSON the user wrote (arguments, a host's file), whose mistakes say how to fix them."""

from __future__ import annotations

import json
from typing import Any

#: The tool ran and answered ``isError``.
TOOL_ERROR = 1
#: A usage, protocol or connection error: the call did not happen (argparse exits 2 on usage too).
FAILED = 2


class CLIError(Exception):
    """Stop the command with ``message`` on stderr and exit ``code``; the message says what to do."""

    def __init__(self, message: str, code: int = FAILED) -> None:
        super().__init__(message)
        self.code = code


def json_object(text: str, where: str, fix: str) -> dict[str, Any]:
    """The JSON object the user gave in ``text`` (named ``where``); else a CLIError ending in ``fix``."""
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise CLIError(f"{where} is not JSON ({exc}); {fix}") from None
    if not isinstance(value, dict):
        raise CLIError(f"{where} must hold a JSON object, not {type(value).__name__}; {fix}")
    return value
