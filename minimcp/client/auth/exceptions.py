"""What can go wrong while a client obtains a token; messages never carry a secret."""

from __future__ import annotations

import json
from dataclasses import dataclass

from minimcp.client.auth.challenge import challenge_param

#: The fields of a JSON error body that carry its words for a person, most specific first: OAuth's
#: ``error_description``, a JSON API's ``detail`` or ``message``, then a bare ``error`` code.
_SAYING_FIELDS = ("error_description", "detail", "message", "error")


@dataclass(frozen=True)
class ServerRefusal:
    """The MCP server's answer that made the client authorize: its status, its challenge and the start
    of its body. When signing in then fails, this is what the person needs: a server that wants an
    API token usually says so, and how to get one, in the answer the flow started from."""

    status: int
    www_authenticate: str | None
    content_type: str
    body: str

    @property
    def said(self) -> str:
        """The server's own words: a JSON error body's message (JSON-RPC's ``error.message``, OAuth's
        ``error_description``, a ``detail`` or ``message``), a plain-text body, else the challenge's
        ``error_description``; ``""`` when it said nothing a person reads (an HTML page, nothing)."""
        media = self.content_type.partition(";")[0].strip().lower()
        if media == "application/json" or media.endswith("+json"):
            said = _json_message(self.body)
        elif media == "text/plain":
            said = self.body.strip()
        else:
            said = ""
        return said or challenge_param(self.www_authenticate, "error_description") or ""


def _json_message(body: str) -> str:
    try:
        value = json.loads(body)
    except ValueError:
        return ""
    if isinstance(value, dict) and isinstance(value.get("error"), dict):
        value = value["error"]  # JSON-RPC: {"error": {"code": ..., "message": ...}}
    if not isinstance(value, dict):
        return ""
    return next((value[name] for name in _SAYING_FIELDS if isinstance(value.get(name), str) and value[name]), "")


class OAuthFlowError(Exception):
    """The authorization flow cannot go on: bad metadata, a refused redirect, a server that will not say yes.

    ``refusal`` is the MCP server's answer that started the flow, when one did (a 401 or a 403
    asking for more scope); ``None`` for a flow started without one.
    """

    refusal: ServerRefusal | None = None


class OAuthTokenError(OAuthFlowError):
    """The token endpoint refused, or answered something that is not a token."""


class OAuthRegistrationError(OAuthFlowError):
    """Dynamic client registration failed or returned a client this flow cannot use."""


__all__ = ["OAuthFlowError", "OAuthRegistrationError", "OAuthTokenError", "ServerRefusal"]
