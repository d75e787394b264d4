"""The official SDK's echo server with its authorization on, the peer of ``bench_server.py --auth``.

    python benchmarks/official_auth_server.py PORT      (BENCH_JWKS_FILE names the JWKS)

``MCPServer(auth=AuthSettings(...), token_verifier=...)`` on the official SDK's fastest shape
(stateless JSON, uvicorn, one worker, access log off). The official SDK ships no JWT verifier, so
this is the one its users write: PyJWT checks each token's RS256 signature against the key from the
JWKS, with the same issuer, audience and expiry checks as minimcp's ``JWTVerifier``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import jwt
import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from jwt_keys import AUDIENCE, ISSUER  # noqa: E402


class PyJWTVerifier:
    def __init__(self, jwks_file: str) -> None:
        with open(jwks_file) as f:
            self.key = jwt.PyJWK(json.load(f)["keys"][0]).key

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            claims = jwt.decode(token, self.key, algorithms=["RS256"], audience=AUDIENCE, issuer=ISSUER, leeway=30)
        except jwt.PyJWTError:
            return None
        return AccessToken(token=token, client_id=claims.get("client_id", ""), scopes=claims.get("scope", "").split(),
                           expires_at=claims["exp"], subject=claims.get("sub"))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("port", type=int)
    args = ap.parse_args()
    mcp = MCPServer("anchor-official-auth", log_level="WARNING",
                    auth=AuthSettings(issuer_url=ISSUER, resource_server_url=AUDIENCE, validate_token_resource=False),
                    token_verifier=PyJWTVerifier(os.environ["BENCH_JWKS_FILE"]))

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    app = mcp.streamable_http_app(stateless_http=True, json_response=True)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
