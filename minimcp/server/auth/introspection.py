"""``IntrospectionTokenVerifier``: ask the authorization server about each token (RFC 7662).

For opaque tokens, or when revocation must take effect within seconds: the token is POSTed to the
introspection endpoint (authenticated with this server's own client credentials when given), and
only an answer with ``"active": true`` that has not expired, and names this server in ``aud`` when
an audience is configured, is accepted. Answers are cached for ``cache_ttl`` seconds at most (and
never past the token's ``exp``), so a revoked token stops working within that time. An endpoint that
is down, slow or answers garbage costs the request at most ``timeout`` seconds and a 401 that says
to try again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

import requests

from minimcp.server.auth.fetch import FetchError, fetch_json
from minimcp.server.auth.provider import AccessToken, InvalidTokenError, scopes_of
from minimcp.server.auth.token_cache import TokenCache

logger = logging.getLogger("minimcp.server.auth")


class IntrospectionTokenVerifier:
    """``IntrospectionTokenVerifier("https://idp.example/introspect", client_id=..., client_secret=...,
    audience="https://mcp.example/mcp")``"""

    def __init__(
        self,
        introspection_endpoint: str,
        *,
        client_id: str | None = None,
        client_secret: str | None = None,
        audience: str | Sequence[str] | None = None,
        issuer: str | None = None,
        timeout: float = 5.0,
        cache_ttl: float = 60.0,
        cache_size: int = 10_000,
        session: requests.Session | None = None,
    ) -> None:
        self.introspection_endpoint = introspection_endpoint
        self._credentials = (client_id, client_secret or "") if client_id is not None else None
        self.audience = [audience] if isinstance(audience, str) else list(audience or [])
        self.issuer = issuer
        self.timeout = timeout
        self.session = session or requests.Session()
        self.cache = TokenCache(cache_size, max_age=cache_ttl)

    def verify_token(self, token: str) -> AccessToken | None:
        key = TokenCache.key(token)
        cached = self.cache.get(key)
        if cached is not None:
            return cached
        try:
            answer = fetch_json(self.session, "POST", self.introspection_endpoint, timeout=self.timeout,
                                data={"token": token, "token_type_hint": "access_token"}, auth=self._credentials,
                                headers={"Accept": "application/json"})
        except FetchError as exc:
            logger.warning("token introspection failed: %s", exc)
            raise InvalidTokenError("The authorization server could not confirm this token; try again later") from None
        access = self._access_token(token, answer)
        self.cache.put(key, access)
        return access

    def _access_token(self, token: str, answer: Any) -> AccessToken:
        if not isinstance(answer, dict) or answer.get("active") is not True:
            raise InvalidTokenError("Token is not active")
        exp = answer.get("exp")
        if isinstance(exp, (int, float)) and exp < time.time():
            raise InvalidTokenError("Token expired")
        if self.issuer is not None and answer.get("iss") != self.issuer:
            raise InvalidTokenError("Token issued by another issuer")
        aud = answer.get("aud")
        audiences = aud if isinstance(aud, list) else [aud] if isinstance(aud, str) else []
        if self.audience:
            resource = next((value for value in audiences if value in self.audience), None)
            if resource is None:
                raise InvalidTokenError("Token not issued for this server (audience)")
        else:
            resource = audiences[0] if len(audiences) == 1 else None
        return AccessToken(
            token=token,
            client_id=str(answer.get("client_id") or ""),
            scopes=scopes_of(answer),
            expires_at=int(exp) if isinstance(exp, (int, float)) else None,
            resource=resource,
            subject=None if answer.get("sub") is None else str(answer["sub"]),
            claims={key: value for key, value in answer.items() if key != "active"},
        )
