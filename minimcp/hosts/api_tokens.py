"""Per-user API tokens of a hosted server: what both hosts issue, keep and show of one.

An API token lets an MCP client act as a user without the site's login page. It carries 256 random
bits, so a fast SHA-256 digest is all a site keeps: nothing can be guessed from it, and a leaked
database holds no usable token. The token itself is shown once, when it is issued; after that a
person recognises it by its hint, its first characters. Each host keeps tokens in its own way (the
Django app in its ``APIToken`` model, the Flask extension in ``minimcp.flask.tokens``); both
commands describe them with :func:`describe`.
"""

from __future__ import annotations

import datetime
import secrets
from dataclasses import dataclass

from minimcp.hosts.site_auth import digest

#: Every token starts with this, so a leaked one is recognisable (secret scanners, logs).
TOKEN_PREFIX = "mcp_"


@dataclass(frozen=True)
class IssuedToken:
    """A new token: ``secret`` for its owner (shown once), ``digest`` and ``hint`` for the site."""

    secret: str
    digest: str
    hint: str


def issue() -> IssuedToken:
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    return IssuedToken(secret, digest(secret), secret[:len(TOKEN_PREFIX) + 4])


def describe(number: int, hint: str, label: str, created: datetime.datetime,
             last_used: datetime.datetime | None) -> str:
    """One line of a token listing: the number that revokes it, and what tells it apart."""
    used = "never used" if last_used is None else f"last used {last_used:%Y-%m-%d %H:%M}"
    return f"{number}\t{hint}\u2026\t{label}\tcreated {created:%Y-%m-%d %H:%M}, {used}"


__all__ = ["TOKEN_PREFIX", "IssuedToken", "describe", "digest", "issue"]
