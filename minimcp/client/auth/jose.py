"""The one door to the JOSE library (PyJWT with ``cryptography``, the ``auth`` extra).

Everything that signs a JWT here (DPoP proofs, ``private_key_jwt`` client assertions) imports it
through :func:`require_jwt`, so a missing extra is one clear message rather than an
``ImportError`` from deep inside a token request.
"""

from __future__ import annotations

from types import ModuleType

INSTALL_HINT = "pip install 'minimcp-sync[auth]'"


def require_jwt(feature: str) -> ModuleType:
    """The ``jwt`` module, or an ``ImportError`` saying which feature needs which extra."""
    try:
        import jwt
        from jwt.algorithms import has_crypto
    except ImportError:
        raise ImportError(f"{feature} signs JWTs with PyJWT; install it with: {INSTALL_HINT}") from None
    if not has_crypto:
        raise ImportError(f"{feature} needs PyJWT's crypto support (the cryptography package): {INSTALL_HINT}")
    return jwt


def jwt_available() -> bool:
    """Whether signing is possible, for features that are used only when they can be."""
    try:
        require_jwt("probe")
    except ImportError:
        return False
    return True


__all__ = ["INSTALL_HINT", "jwt_available", "require_jwt"]
