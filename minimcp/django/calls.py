"""The Django request a generated tool (a model toolset, a published DRF view) runs with.

A tool runs on a worker thread, after the endpoint's own request was answered or while it waits;
code written for views (``get_queryset(self, request)``, a DRF view) expects a request. This one is
real (a ``WSGIRequest`` built from an environ, as Django's handler builds them), carries the MCP
caller as ``request.user``, and says in ``request.META["minimcp.tool"]`` which tool it serves.

It also comes from where the MCP request came from: the caller's address (``REMOTE_ADDR``), the
forwarding headers exactly as that request had them (none it did not have), its user agent and
language, and the host and scheme it addressed. A view that trusts only some addresses, or a
throttle keyed by address, then treats a tool call as it treats the same caller's web request.
Credentials (cookies, ``Authorization``) are not carried: the MCP endpoint already named the user.
Without an MCP request (``manage.py mcp_stdio``) the call comes from this machine, ``127.0.0.1``.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import json
from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.handlers.wsgi import WSGIRequest

#: What a tool's request takes from the MCP request that carried the call.
CARRIED = ("REMOTE_ADDR", "REMOTE_HOST", "HTTP_X_FORWARDED_FOR", "HTTP_X_REAL_IP", "HTTP_FORWARDED",
           "HTTP_X_FORWARDED_HOST", "HTTP_X_FORWARDED_PORT", "HTTP_X_FORWARDED_PROTO", "HTTP_USER_AGENT",
           "HTTP_ACCEPT_LANGUAGE", "HTTP_HOST", "SERVER_NAME", "SERVER_PORT", "wsgi.url_scheme", "HTTPS")

#: The carried part of the MCP request being served: set by the endpoint's view on the request
#: thread (listings run there) and by the call scope on the worker (tools run there).
_origin: contextvars.ContextVar[Mapping[str, Any] | None] = contextvars.ContextVar("minimcp_django_origin",
                                                                                  default=None)


def origin() -> Mapping[str, Any] | None:
    """The carried part of the MCP request this thread serves, or ``None`` (stdio, a script)."""
    return _origin.get()


@contextlib.contextmanager
def coming_from(meta: Mapping[str, Any] | None) -> Iterator[None]:
    """Make the tool requests on this thread come from where the request with ``meta`` came from."""
    token = _origin.set(None if meta is None else {key: meta[key] for key in CARRIED if key in meta})
    try:
        yield
    finally:
        _origin.reset(token)


def call_request(user: Any, tool: str, method: str = "GET", path: str = "/", query: dict[str, Any] | None = None,
                 body: Any = None) -> WSGIRequest:
    """A request for ``method path?query`` with a JSON ``body``, made by ``user``."""
    from django.contrib.auth.models import AnonymousUser  # a model: not before the apps are loaded

    data = b"" if body is None else json.dumps(body, default=str).encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method.upper(), "PATH_INFO": path, "SCRIPT_NAME": "",
        "QUERY_STRING": urlencode({k: v for k, v in (query or {}).items() if v is not None}, doseq=True),
        "SERVER_NAME": _host(), "SERVER_PORT": "80", "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": _host(),
        "wsgi.url_scheme": "http", **(_origin.get() or {}),
        "SERVER_PROTOCOL": "HTTP/1.1", "HTTP_ACCEPT": "application/json",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data), "wsgi.errors": io.StringIO(),
        "minimcp.tool": tool,
    }
    request = WSGIRequest(environ)
    request.user = user if user is not None else AnonymousUser()
    request._dont_enforce_csrf_checks = True  # the MCP endpoint authenticated the caller; no form of the site
    return request


def _host() -> str:
    """A host the project allows (links a view builds, such as a paginator's, must pass ``ALLOWED_HOSTS``)."""
    for host in settings.ALLOWED_HOSTS:
        if "*" not in host:
            return host.lstrip(".")
    return "localhost"
