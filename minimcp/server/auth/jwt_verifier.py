"""``JWTVerifier``: accept JWT access tokens (RFC 9068) signed by an identity provider's published keys.

What is checked, and why each check is here:

- the signature, with a key from the issuer's JWKS, under an algorithm from a pinned list of
  asymmetric ones. ``none`` and the HMAC family are refused when the verifier is built, so a token
  that says ``alg: none``, or ``HS256`` "signed" with the RSA public key as the secret, can never
  select them; the JWK must also be of the family its algorithm needs;
- ``iss`` equals the configured issuer exactly;
- ``aud`` names this server (the RFC 8707 resource it was issued for);
- ``exp`` and ``nbf`` (when present) hold, with ``leeway`` seconds for clock skew; ``exp`` is required.

Scopes come from ``scope`` (space-separated) or ``scp`` (a list or a string); the client from
``client_id`` (RFC 9068) or ``azp``. Verified tokens are cached until they expire (``TokenCache``).
PyJWT and cryptography do the cryptography: ``pip install 'minimcp-sync[auth]'``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import requests

from minimcp.server.auth.jwks import JWKSCache
from minimcp.server.auth.provider import AccessToken, InvalidTokenError, scopes_of
from minimcp.server.auth.token_cache import TokenCache

try:
    import jwt
except ImportError:  # pragma: no cover - exercised only without the extra
    jwt = None  # type: ignore[assignment]

#: The asymmetric algorithms a JWKS can serve, each with the key type (and curve) it needs.
ASYMMETRIC_ALGORITHMS: dict[str, tuple[str, str | None]] = {
    "RS256": ("RSA", None), "RS384": ("RSA", None), "RS512": ("RSA", None),
    "PS256": ("RSA", None), "PS384": ("RSA", None), "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"), "ES384": ("EC", "P-384"), "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", None),
}


class JWTVerifier:
    """Verify JWT access tokens against the issuer's JWKS.

    ``JWTVerifier(jwks_uri="https://idp.example/.well-known/jwks.json",
    issuer="https://idp.example/", audience="https://mcp.example/mcp")``

    ``audience`` is this server's resource URL (or several accepted values); ``algorithms`` the
    signing algorithms your identity provider uses (asymmetric only); ``leeway`` the clock skew
    tolerated, in seconds. The key set is refetched at most every ``jwks_min_refresh_interval``
    seconds when a token names an unknown key, and every ``jwks_max_age`` seconds otherwise;
    each fetch gives up after ``timeout`` seconds.
    """

    def __init__(
        self,
        *,
        jwks_uri: str,
        issuer: str,
        audience: str | Sequence[str],
        algorithms: Sequence[str] = ("RS256",),
        leeway: float = 30.0,
        timeout: float = 5.0,
        jwks_max_age: float = 3600.0,
        jwks_min_refresh_interval: float = 30.0,
        cache_size: int = 10_000,
        session: requests.Session | None = None,
    ) -> None:
        if jwt is None:
            raise ImportError("JWTVerifier needs PyJWT and cryptography: pip install 'minimcp-sync[auth]'")
        refused = [alg for alg in algorithms if alg not in ASYMMETRIC_ALGORITHMS]
        if refused or not algorithms:
            raise ValueError(
                f"JWTVerifier accepts asymmetric algorithms only ({', '.join(ASYMMETRIC_ALGORITHMS)}); "
                f"refused: {', '.join(refused) or 'an empty list'}. 'none' and HMAC (HS256...) cannot be "
                "verified with a public key set.")
        self.issuer = issuer
        self.audience = [audience] if isinstance(audience, str) else list(audience)
        if not self.audience:
            raise ValueError("JWTVerifier needs the audience this server's tokens are issued for")
        self.algorithms = list(algorithms)
        self.leeway = leeway
        self.jwks = JWKSCache(jwks_uri, session=session, timeout=timeout, max_age=jwks_max_age,
                              min_refresh_interval=jwks_min_refresh_interval)
        self.cache = TokenCache(cache_size)

    def verify_token(self, token: str) -> AccessToken | None:
        key = TokenCache.key(token)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        access = self._verify(token)
        self.cache.put(key, access)
        return access

    def _verify(self, token: str) -> AccessToken:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise InvalidTokenError("Malformed token: not a signed JWT") from None
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise InvalidTokenError(f"Token algorithm {algorithm!r} is not accepted")
        kid = header.get("kid")
        signing_key = self._signing_key(self.jwks.key(kid if isinstance(kid, str) else None), algorithm)
        try:
            claims = jwt.decode(
                token, signing_key, algorithms=[algorithm], audience=self.audience, issuer=self.issuer,
                leeway=self.leeway, options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.ExpiredSignatureError:
            raise InvalidTokenError("Token expired") from None
        except jwt.ImmatureSignatureError:
            raise InvalidTokenError("Token not yet valid") from None
        except jwt.InvalidIssuerError:
            raise InvalidTokenError("Token issued by another issuer") from None
        except jwt.InvalidAudienceError:
            raise InvalidTokenError("Token not issued for this server (audience)") from None
        except jwt.MissingRequiredClaimError as missing:
            raise InvalidTokenError(f"Token lacks the {missing.claim!r} claim") from None
        except jwt.InvalidSignatureError:
            raise InvalidTokenError("Token signature is invalid") from None
        except jwt.PyJWTError:
            raise InvalidTokenError("Malformed token") from None
        return self._access_token(token, claims)

    @staticmethod
    def _signing_key(jwk: dict[str, Any], algorithm: str) -> Any:
        """The public key of ``jwk`` for ``algorithm``, refusing a key of another family or algorithm."""
        kty, curve = ASYMMETRIC_ALGORITHMS[algorithm]
        if jwk.get("kty") != kty or (curve is not None and jwk.get("crv") != curve):
            raise InvalidTokenError(f"Token algorithm {algorithm} does not match its signing key")
        if jwk.get("alg") not in (None, algorithm):
            raise InvalidTokenError(f"Token algorithm {algorithm} does not match its signing key")
        try:
            return jwt.PyJWK(jwk, algorithm=algorithm).key
        except jwt.PyJWTError:
            raise InvalidTokenError("The token's signing key in the key set is unusable") from None

    def _access_token(self, token: str, claims: dict[str, Any]) -> AccessToken:
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        resource = next((aud for aud in audiences if aud in self.audience), None)
        exp = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or ""),
            scopes=scopes_of(claims),
            expires_at=int(exp) if isinstance(exp, (int, float)) else None,
            resource=resource,
            subject=None if claims.get("sub") is None else str(claims["sub"]),
            claims=claims,
        )
