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
import hashlib
import hmac
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


def issue(site_key: bytes | None = None) -> IssuedToken:
    """A new token; with ``site_key``, its digest is that site's (:func:`site_digest`)."""
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    stored = digest(secret) if site_key is None else site_digest(secret, site_key)
    return IssuedToken(secret, stored, secret[:len(TOKEN_PREFIX) + 4])


def site_digest(token: str, site_key: bytes) -> str:
    """What a site keeps of ``token``, keyed with its secret: where sites share one token table
    (staging and production started from one folder), a token one issued matches nothing of the
    other's, as the other's session cookies would not verify there either."""
    return hmac.new(site_key, b"minimcp.api-token:" + token.encode(), hashlib.sha256).hexdigest()


def site_id(site_key: bytes) -> str:
    """A name for the site that holds ``site_key``, which tells its rows of a shared table apart
    and gives nothing of the key away."""
    return hmac.new(site_key, b"minimcp.site", hashlib.sha256).hexdigest()[:32]


def describe(number: int, hint: str, label: str, created: datetime.datetime,
             last_used: datetime.datetime | None) -> str:
    """One line of a token listing: the number that revokes it, and what tells it apart."""
    used = "never used" if last_used is None else f"last used {last_used:%Y-%m-%d %H:%M}"
    return f"{number}\t{hint}\u2026\t{label}\tcreated {created:%Y-%m-%d %H:%M}, {used}"


__all__ = ["TOKEN_PREFIX", "IssuedToken", "describe", "digest", "issue", "site_digest", "site_id"]
