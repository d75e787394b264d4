"""The exceptions that travel between server and client, under the official import path."""

from minimcp.jsonrpc import MCPError, NoBackChannelError, UrlElicitationRequiredError


#: How minimcp's server begins its refusal of an answer no question of the session awaits here: the
#: client reads it to tell "asked by another process" from the other refusals of an answer.
UNKNOWN_QUESTION = "No question of this session awaits an answer"


class MCPDeprecationWarning(DeprecationWarning):
    """Emitted by features the 2026-07-28 revision deprecates (protocol logging, sampling, roots)."""


__all__ = ["MCPDeprecationWarning", "MCPError", "NoBackChannelError", "UrlElicitationRequiredError"]
