"""Test keys, tokens and a key server for the authorization tests, and a registration flood.

Keys are generated per test session (nothing secret is stored in the repository); tokens are real
JWTs signed with them by PyJWT. ``KeyServer`` is a WSGI app serving a JWKS whose behaviour a test
switches: the normal set, another set (a rotation), down (503), slow, trickling, or garbage.
"""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import jwt
import requests
from cryptography.hazmat.primitives import serialization
from conftest import TIMEOUT
from cryptography.hazmat.primitives.asymmetric import ec, rsa


@lru_cache(maxsize=None)
def rsa_key(name: str = "main") -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@lru_cache(maxsize=None)
def ec_key(name: str = "main") -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def public_jwk(key: Any, kid: str, alg: str | None = None) -> dict[str, Any]:
    algorithm = jwt.algorithms.RSAAlgorithm if isinstance(key, rsa.RSAPrivateKey) else jwt.algorithms.ECAlgorithm
    jwk = json.loads(algorithm.to_jwk(key.public_key()))
    jwk.update({"kid": kid, "use": "sig"})
    if alg is not None:
        jwk["alg"] = alg
    return jwk


def public_pem(key: Any) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


def mint(claims: dict[str, Any] | None = None, *, key: Any = None, kid: str | None = "k1", alg: str = "RS256",
         issuer: str = "https://idp.test", audience: Any = "http://mcp.test/mcp", lifetime: float = 300,
         **extra: Any) -> str:
    """A JWT access token signed by ``key`` (the main RSA key by default)."""
    now = int(time.time())
    body: dict[str, Any] = {"iss": issuer, "aud": audience, "sub": "alice", "client_id": "client-1",
                            "iat": now, "exp": now + lifetime, "scope": "mcp:read", "jti": uuid.uuid4().hex}
    body.update(claims or {})
    body.update(extra)
    body = {k: v for k, v in body.items() if v is not None}
    headers = {"kid": kid} if kid is not None else {}
    return jwt.encode(body, key if key is not None else rsa_key(), algorithm=alg, headers=headers)


def unsigned(claims: dict[str, Any], header: dict[str, Any]) -> str:
    """A token whose header says what the test wants (``alg: none``) and whose signature is empty."""
    def part(data: dict[str, Any]) -> str:
        return jwt.utils.base64url_encode(json.dumps(data).encode()).decode()
    return f"{part(header)}.{part(claims)}."


class KeyServer:
    """A JWKS endpoint as a WSGI app; ``mode`` picks how it misbehaves (``down``, ``slow``,
    ``trickle``, ``garbage``, ``nokeys``, ``huge``, ``redirect-trickle``, ``redirect-endless``),
    ``fetches`` counts requests."""

    def __init__(self, keys: list[dict[str, Any]]) -> None:
        self.keys = keys
        self.mode = "ok"
        self.fetches = 0
        self.sent = 0  # bytes of an endless redirect body handed to the server
        self.release = threading.Event()  # ends a "slow" or "trickle" answer early at teardown
        self._lock = threading.Lock()

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        with self._lock:
            self.fetches += 1
        if self.mode == "down":
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [b"down"]
        if self.mode == "slow":
            self.release.wait(10)
        if self.mode == "trickle":
            start_response("200 OK", [("Content-Type", "application/json")])
            return self._trickle()
        if self.mode.startswith("redirect"):  # to the keys, with a body that trickles or never ends
            start_response("302 Found", [("Location", "/elsewhere.json"), ("Content-Type", "text/html")])
            return self._trickle() if self.mode == "redirect-trickle" else self._endless()
        body = {"ok": json.dumps({"keys": self.keys}).encode(), "slow": json.dumps({"keys": self.keys}).encode(),
                "garbage": b"<html>not a key set</html>", "nokeys": b'{"keys": 5}',
                "huge": b'{"keys": [' + b" " * (2 * 1024 * 1024) + b"]}"}[self.mode]
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    def _endless(self) -> Iterable[bytes]:
        """Spaces until the client leaves (at most 256 MB); ``sent`` counts them."""
        chunk = b" " * 65536
        while self.sent < 256 * 1024 * 1024 and not self.release.is_set():
            self.sent += len(chunk)
            yield chunk

    def _trickle(self) -> Iterable[bytes]:
        yield b'{"keys": ['
        for _ in range(200):
            if self.release.wait(0.05):
                return
            yield b" "
        yield b"]}"


def until_limited(registration_endpoint: str, redirect_uri: str, attempts: int = 40) -> tuple[int, requests.Response]:
    """Register until the rate limit answers: how many were accepted first, and the refusal. The
    bucket holds ten and refills one every six seconds, so a slow machine may see a few more."""
    accepted = 0
    for _ in range(attempts):
        answer = requests.post(registration_endpoint, json={"redirect_uris": [redirect_uri]}, timeout=TIMEOUT)
        if answer.status_code != 201:
            return accepted, answer
        accepted += 1
    raise AssertionError(f"{attempts} registrations in a row were accepted")
