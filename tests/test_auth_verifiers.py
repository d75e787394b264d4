"""The ready token verifiers against real JWTs and a real key server on a loopback port.

``JWTVerifier``: every claim check, the algorithm pinning (``none``, HS256 signed with the RSA public
key), key rotation and its rate limit, and a key server that is down, slow, trickling or answering
garbage (each a prompt refusal, never a hang). ``IntrospectionTokenVerifier``: active, inactive,
foreign audience, endpoint down.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from typing import Any, Callable

import jwt
import pytest
from auth_support import KeyServer, ec_key, mint, public_jwk, public_pem, rsa_key, unsigned

from minimcp.server.auth.introspection import IntrospectionTokenVerifier
from minimcp.server.auth.jwks import UNAVAILABLE
from minimcp.server.auth.jwt_verifier import JWTVerifier
from minimcp.server.auth.provider import InvalidTokenError

ISSUER = "https://idp.test"
AUDIENCE = "http://mcp.test/mcp"


@pytest.fixture
def keys() -> KeyServer:
    return KeyServer([public_jwk(rsa_key(), "k1")])


@pytest.fixture
def verifier(keys: KeyServer, serve_wsgi: Callable[[Any], str]) -> Callable[..., JWTVerifier]:
    base = serve_wsgi(keys)

    def make(**options: Any) -> JWTVerifier:
        options.setdefault("issuer", ISSUER)
        options.setdefault("audience", AUDIENCE)
        return JWTVerifier(jwks_uri=base + "/jwks.json", **options)

    yield make
    keys.release.set()


def refusal(verifier: JWTVerifier, token: str) -> str:
    with pytest.raises(InvalidTokenError) as refused:
        verifier.verify_token(token)
    return refused.value.description


def test_a_good_token_grants_its_scopes_subject_client_and_resource(verifier):
    access = verifier().verify_token(mint({"scope": "mcp:read mcp:write"}))
    assert access.scopes == ["mcp:read", "mcp:write"]
    assert (access.subject, access.client_id, access.resource) == ("alice", "client-1", AUDIENCE)
    assert access.claims["iss"] == ISSUER and access.expires_at > time.time()


def test_scopes_may_come_as_scp_list_and_client_as_azp(verifier):
    access = verifier().verify_token(mint({"scope": None, "scp": ["a", "b"], "client_id": None, "azp": "web"}))
    assert access.scopes == ["a", "b"] and access.client_id == "web"


def test_an_audience_list_naming_this_server_is_accepted(verifier):
    access = verifier().verify_token(mint(audience=["http://other.test", AUDIENCE]))
    assert access.resource == AUDIENCE


def test_expired_token_is_refused_but_skew_within_the_leeway_is_tolerated(verifier):
    v = verifier(leeway=30)
    assert refusal(v, mint(lifetime=-120)) == "Token expired"
    assert v.verify_token(mint(lifetime=-5)) is not None


def test_not_yet_valid_token_is_refused(verifier):
    assert refusal(verifier(), mint({"nbf": int(time.time()) + 600})) == "Token not yet valid"


@pytest.mark.parametrize("token", ["abc", "a.b.c", "....", "eyJhbGciOiJSUzI1NiJ9.e30.AAAA", "x" * 5000])
def test_malformed_tokens_are_refused(verifier, token):
    assert "Malformed" in refusal(verifier(), token) or "signature" in refusal(verifier(), token)


def test_wrong_issuer_and_wrong_audience_are_refused(verifier):
    v = verifier()
    assert refusal(v, mint(issuer="https://evil.test")) == "Token issued by another issuer"
    assert refusal(v, mint(audience="http://other.test/mcp")) == "Token not issued for this server (audience)"
    assert refusal(v, mint(audience=None)) == "Token lacks the 'aud' claim"
    assert refusal(v, mint({"exp": None})) == "Token lacks the 'exp' claim"


def test_alg_none_is_refused(verifier):
    now = int(time.time())
    token = unsigned({"iss": ISSUER, "aud": AUDIENCE, "sub": "alice", "exp": now + 60}, {"alg": "none", "kid": "k1"})
    assert refusal(verifier(), token) == "Token algorithm 'none' is not accepted"


def test_hs256_signed_with_the_rsa_public_key_is_refused(verifier):
    """The classic key-confusion attack: the public key, which anyone has, used as an HMAC secret."""
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": now + 60}
    signing_input = unsigned(claims, {"alg": "HS256", "typ": "JWT", "kid": "k1"})[:-1]
    mac = hmac.new(public_pem(rsa_key()), signing_input.encode(), hashlib.sha256).digest()
    token = signing_input + "." + jwt.utils.base64url_encode(mac).decode()
    assert refusal(verifier(), token) == "Token algorithm 'HS256' is not accepted"


def test_a_verifier_cannot_be_configured_with_none_or_hmac(keys):
    for algorithms in (["none"], ["HS256"], ["RS256", "HS256"], []):
        with pytest.raises(ValueError, match="asymmetric algorithms only"):
            JWTVerifier(jwks_uri="http://127.0.0.1:9/jwks", issuer=ISSUER, audience=AUDIENCE, algorithms=algorithms)


def test_a_key_of_the_wrong_family_for_the_algorithm_is_refused(keys, verifier):
    keys.keys = [public_jwk(rsa_key(), "k1"), {**public_jwk(ec_key(), "e1")}]
    v = verifier(algorithms=["RS256", "ES256"])
    # ES256 header naming the RSA key: the key's family does not match the algorithm
    token = mint(key=ec_key(), kid="k1", alg="ES256")
    assert refusal(v, token) == "Token algorithm ES256 does not match its signing key"
    assert v.verify_token(mint(key=ec_key(), kid="e1", alg="ES256")).subject == "alice"


def test_a_signature_by_another_key_is_refused(verifier):
    assert refusal(verifier(), mint(key=rsa_key("other"))) == "Token signature is invalid"


def test_key_rotation_is_picked_up_on_an_unknown_kid(keys, verifier):
    v = verifier(jwks_min_refresh_interval=0)
    assert v.verify_token(mint()) is not None
    keys.keys = [public_jwk(rsa_key("next"), "k2")]
    assert v.verify_token(mint(key=rsa_key("next"), kid="k2")) is not None
    assert keys.fetches == 2


def test_unknown_kids_refetch_at_most_once_per_interval(keys, verifier):
    v = verifier(jwks_min_refresh_interval=3600)
    v.verify_token(mint())
    for n in range(20):
        assert refusal(v, mint(kid=f"made-up-{n}")) == "Token signed with an unknown key"
    assert keys.fetches == 1


def test_verified_tokens_are_cached_until_expiry_and_the_cache_is_bounded(keys, verifier):
    v = verifier(cache_size=2)
    token = mint()
    first = v.verify_token(token)
    assert v.verify_token(token) is first
    for _ in range(3):
        v.verify_token(mint())
    assert len(v.cache) == 2


@pytest.mark.parametrize("mode", ["down", "garbage", "nokeys", "huge"])
def test_a_broken_key_server_is_a_clear_refusal(keys, verifier, mode, caplog):
    keys.mode = mode
    token = mint()
    with caplog.at_level(logging.DEBUG):
        assert refusal(verifier(), token) == UNAVAILABLE
    assert token not in caplog.text and "JWKS fetch failed" in caplog.text


def test_an_unreachable_key_server_is_a_clear_refusal():
    v = JWTVerifier(jwks_uri="http://127.0.0.1:9/jwks.json", issuer=ISSUER, audience=AUDIENCE, timeout=2)
    assert refusal(v, mint()) == UNAVAILABLE


@pytest.mark.parametrize("mode", ["slow", "trickle"])
def test_a_slow_key_server_costs_a_bounded_wait(keys, verifier, mode):
    keys.mode = mode
    v = verifier(timeout=0.5)
    started = time.monotonic()
    assert refusal(v, mint()) == UNAVAILABLE
    assert time.monotonic() - started < 8  # the server would take 10 s; the fetch gives up at 0.5 s
    # while the key server stays broken, the next requests fail at once instead of waiting again
    assert refusal(v, mint()) == UNAVAILABLE
    assert keys.fetches == 1


@pytest.mark.parametrize("mode", ["redirect-trickle", "redirect-endless"])
def test_a_redirect_is_refused_without_reading_its_body(keys, verifier, mode):
    """A redirect is no key set: its body, however slow or long, is never read."""
    keys.mode = mode
    started = time.monotonic()
    assert refusal(verifier(timeout=0.5), mint()) == UNAVAILABLE
    assert time.monotonic() - started < 8  # the trickle would take 10 s
    assert keys.sent < 64 * 1024 * 1024, f"{keys.sent:,} bytes of a redirect's body were read"


def test_the_verifier_recovers_when_the_key_server_comes_back(keys, verifier):
    keys.mode = "down"
    v = verifier(jwks_min_refresh_interval=0)
    assert refusal(v, mint()) == UNAVAILABLE
    keys.mode = "ok"
    assert v.verify_token(mint()) is not None


# --- introspection -------------------------------------------------------------------------------
class Introspection:
    """An RFC 7662 endpoint: tokens it knows, the credentials it wants, and a switch to take it down."""

    def __init__(self) -> None:
        self.known: dict[str, dict[str, Any]] = {}
        self.down = False
        self.calls = 0
        self.auth: str | None = None

    def __call__(self, environ: dict[str, Any], start_response: Any) -> list[bytes]:
        from urllib.parse import parse_qs
        import json

        self.calls += 1
        if self.down:
            start_response("502 Bad Gateway", [("Content-Type", "text/plain")])
            return [b"bad gateway"]
        self.auth = environ.get("HTTP_AUTHORIZATION")
        length = int(environ.get("CONTENT_LENGTH") or 0)
        form = parse_qs(environ["wsgi.input"].read(length).decode())
        answer = self.known.get(form["token"][0], {"active": False})
        body = json.dumps(answer).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]


def test_introspection_accepts_active_tokens_and_refuses_the_rest(serve_wsgi):
    endpoint = Introspection()
    url = serve_wsgi(endpoint) + "/introspect"
    now = int(time.time())
    endpoint.known["good"] = {"active": True, "client_id": "c1", "sub": "bob", "scope": "mcp:read",
                              "exp": now + 60, "aud": AUDIENCE, "iss": ISSUER}
    endpoint.known["foreign"] = {"active": True, "client_id": "c1", "exp": now + 60, "aud": "http://x.test"}
    endpoint.known["stale"] = {"active": True, "client_id": "c1", "exp": now - 60, "aud": AUDIENCE}
    v = IntrospectionTokenVerifier(url, client_id="rs", client_secret="s3cret", audience=AUDIENCE)
    access = v.verify_token("good")
    assert (access.subject, access.scopes, access.resource) == ("bob", ["mcp:read"], AUDIENCE)
    assert endpoint.auth and endpoint.auth.startswith("Basic ")
    assert v.verify_token("good") is access and endpoint.calls == 1  # cached
    for token, reason in [("unknown", "Token is not active"), ("foreign", "Token not issued for this server"),
                          ("stale", "Token expired")]:
        with pytest.raises(InvalidTokenError, match=reason):
            v.verify_token(token)


def test_introspection_endpoint_down_is_a_clear_refusal(serve_wsgi, caplog):
    endpoint = Introspection()
    endpoint.down = True
    v = IntrospectionTokenVerifier(serve_wsgi(endpoint) + "/introspect", timeout=2)
    with caplog.at_level(logging.DEBUG), pytest.raises(InvalidTokenError, match="try again later"):
        v.verify_token("opaque-secret-token")
    assert "opaque-secret-token" not in caplog.text
