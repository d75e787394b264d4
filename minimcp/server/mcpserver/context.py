"""``Context``: what a tool, resolver, resource or prompt knows about the request it serves.

The public path; the code lives in ``minimcp.server.app.context``."""

from minimcp.server.app.context import (
    Context,
)

__all__ = ["Context"]
