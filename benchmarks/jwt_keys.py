"""Key material for the authorization benchmark: one RSA key, its JWKS, and a token signed with it.

``run.py`` writes the JWKS to a file the measured servers read (``BENCH_JWKS_FILE``) and hands the
token to the load generator (``BENCH_BEARER``); both servers check the same RS256 signature, issuer,
audience and expiry. Needs the ``auth`` extra (PyJWT, cryptography).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

ISSUER = "https://issuer.bench.test"
AUDIENCE = "https://mcp.bench.test/mcp"
KID = "bench-1"


def make_keys(folder: Path) -> tuple[Path, str]:
    """Write ``jwks.json`` into ``folder``; return its path and a token valid for two hours."""
    import jwt
    from cryptography.hazmat.primitives.asymmetric import rsa

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk.update({"kid": KID, "use": "sig", "alg": "RS256"})
    path = folder / "jwks.json"
    path.write_text(json.dumps({"keys": [jwk]}))
    now = int(time.time())
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "bench-user", "client_id": "bench-client",
              "scope": "mcp", "iat": now, "exp": now + 7200}
    return path, jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})
