"""PKCE (RFC 7636, method S256) and the ``state`` value that ties a redirect to its request."""

from __future__ import annotations

import base64
import hashlib
import secrets

from pydantic import BaseModel, Field

#: RFC 7636 §4.1 unreserved characters.
_VERIFIER_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~"


def s256(verifier: str) -> str:
    """``BASE64URL(SHA256(verifier))`` without padding: the challenge for a verifier."""
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


class PKCEParameters(BaseModel):
    """One verifier/challenge pair; a new pair for every authorization request."""

    code_verifier: str = Field(..., min_length=43, max_length=128, repr=False)
    code_challenge: str = Field(..., min_length=43, max_length=128)

    @classmethod
    def generate(cls) -> PKCEParameters:
        verifier = "".join(secrets.choice(_VERIFIER_ALPHABET) for _ in range(128))
        return cls(code_verifier=verifier, code_challenge=s256(verifier))


def new_state() -> str:
    """An unguessable ``state``; the redirect must bring back exactly this value."""
    return secrets.token_urlsafe(32)


__all__ = ["PKCEParameters", "new_state", "s256"]
