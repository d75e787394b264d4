"""What an extension identifier may look like, and whether a peer declared one (SEP-2133).

Shared by both sides: the server's ``Extension`` and the client's ``ClientExtension`` check their
identifiers here, and the server asks here whether a client's capabilities carry an extension.
"""

from __future__ import annotations

import re
from typing import Any

# A reverse-DNS prefix (dot-separated labels: a letter first, a letter or digit last, hyphens
# inside), a slash, then a name that starts and ends alphanumeric with ``._-`` inside.
_LABEL = r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_NAME = r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
_IDENTIFIER = re.compile(rf"{_LABEL}(?:\.{_LABEL})*/{_NAME}")


def validate_extension_identifier(identifier: Any, *, owner: str) -> str:
    """``identifier``, once it is a string with its vendor prefix; else ``TypeError`` naming
    ``owner``: two vendors' ``search`` must never meet under one key of ``capabilities.extensions``."""
    if not isinstance(identifier, str) or not _IDENTIFIER.fullmatch(identifier):
        raise TypeError(f"{owner}.identifier must be a `vendor-prefix/name` string "
                        f"(reverse-DNS prefix required, e.g. 'com.example/search'), got {identifier!r}")
    return identifier


def declares_extension(capabilities: Any, identifier: str) -> bool:
    """Whether a ``ClientCapabilities`` (or its wire dict) declares ``identifier``."""
    extensions = capabilities.get("extensions") if isinstance(capabilities, dict) else \
        getattr(capabilities, "extensions", None)
    return isinstance(extensions, dict) and identifier in extensions


def extension_required_data(identifier: str) -> dict[str, Any]:
    """The ``data`` of the -32021 error a client gets when it must declare ``identifier`` first."""
    return {"requiredCapabilities": {"extensions": {identifier: {}}}}


__all__ = ["declares_extension", "extension_required_data", "validate_extension_identifier"]
