"""DPoP (RFC 9449): a key held by this client, and a fresh signed proof for every HTTP request.

A DPoP-bound token is useless without the private key, so a stolen token cannot be replayed from
elsewhere. Each proof names the method and URL it was made for (``htm``, ``htu``), carries a unique
``jti`` and the time, the hash of the access token it accompanies (``ath``) and, once a server has
asked for one, that server's nonce.
"""

from __future__ import annotations

import base64
import hashlib
import threading
import time
import uuid
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from minimcp.client.auth.jose import require_jwt

#: The signing algorithm of the keys this module makes: ECDSA P-256, the one every DPoP server takes.
DPOP_ALGORITHM = "ES256"


def http_uri(url: str) -> str:
    """``htu``: the request URL without query and fragment (RFC 9449 §4.2)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def access_token_hash(access_token: str) -> str:
    """``ath``: base64url of the SHA-256 of the access token's ASCII bytes."""
    digest = hashlib.sha256(access_token.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).decode("ascii").rstrip("=")


class DPoPKey:
    """One proof-of-possession key pair, and the nonce each server (by origin) last asked for."""

    def __init__(self) -> None:
        jwt = require_jwt("DPoP")
        from cryptography.hazmat.primitives.asymmetric import ec

        self._jwt = jwt
        self._private_key = ec.generate_private_key(ec.SECP256R1())
        self.public_jwk: dict[str, Any] = jwt.algorithms.ECAlgorithm.to_jwk(self._private_key.public_key(), as_dict=True)
        # Guards _nonces: request threads read them while response hooks on other threads store new ones.
        self._lock = threading.Lock()
        self._nonces: dict[str, str] = {}

    @staticmethod
    def _origin(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.scheme.lower()}://{parts.netloc.lower()}"

    def remember_nonce(self, url: str, nonce: str | None) -> None:
        """Keep the ``DPoP-Nonce`` a server sent; later proofs to that origin carry it."""
        if nonce:
            with self._lock:
                self._nonces[self._origin(url)] = nonce

    def nonce_for(self, url: str) -> str | None:
        with self._lock:
            return self._nonces.get(self._origin(url))

    def proof(self, method: str, url: str, access_token: str | None = None) -> str:
        """A new proof JWT for one request (never reuse one: servers reject a repeated ``jti``)."""
        claims: dict[str, Any] = {
            "jti": str(uuid.uuid4()),
            "htm": method.upper(),
            "htu": http_uri(url),
            "iat": int(time.time()),
        }
        if access_token is not None:
            claims["ath"] = access_token_hash(access_token)
        nonce = self.nonce_for(url)
        if nonce is not None:
            claims["nonce"] = nonce
        headers = {"typ": "dpop+jwt", "jwk": self.public_jwk}
        return self._jwt.encode(claims, self._private_key, algorithm=DPOP_ALGORITHM, headers=headers)


__all__ = ["DPOP_ALGORITHM", "DPoPKey", "access_token_hash", "http_uri"]
