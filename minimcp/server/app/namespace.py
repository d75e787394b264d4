"""What a mount's namespace may be (``MCPServer.mount``), in a module of its own: the gateway's
configuration (``proxy.config``) checks its entries' names by the same rule without importing the
mount machinery."""

from __future__ import annotations

import re

__all__ = ["NAMESPACE", "check_namespace"]

#: What a namespace may be: a valid tool-name prefix and a URI path segment (never ``.`` or ``..``).
NAMESPACE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def check_namespace(namespace: str | None) -> str | None:
    """``namespace`` if it is one (see ``minimcp.server.app.mount``), else the ``ValueError`` saying what is."""
    if namespace is None:
        return None
    if not isinstance(namespace, str) or not NAMESPACE.fullmatch(namespace):
        raise ValueError(f"namespace {namespace!r} is not usable: use 1 to 64 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit (it prefixes tool names and becomes a URI path segment), "
                         "or namespace=None to mount without a prefix")
    return namespace
