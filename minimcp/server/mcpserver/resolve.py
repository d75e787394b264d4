"""Resolvers: parameters the framework fills by running a function before the tool body.

The public path; the code lives in ``minimcp.server.app.resolve``."""

from minimcp.server.app.resolve import (
    Elicit,
    ListRoots,
    Resolve,
    Sample,
)

__all__ = ["Elicit", "ListRoots", "Resolve", "Sample"]
