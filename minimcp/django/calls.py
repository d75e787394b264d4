"""The Django request a generated tool (a model toolset, a published DRF view) runs with.

A tool runs on a worker thread, after the endpoint's own request was answered or while it waits;
code written for views (``get_queryset(self, request)``, a DRF view) expects a request. This one is
real (a ``WSGIRequest`` built from an environ, as Django's handler builds them), carries the MCP
caller as ``request.user``, and says in ``request.META["minimcp.tool"]`` which tool it serves.
"""

from __future__ import annotations

import io
import json
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.handlers.wsgi import WSGIRequest


def call_request(user: Any, tool: str, method: str = "GET", path: str = "/", query: dict[str, Any] | None = None,
                 body: Any = None) -> WSGIRequest:
    """A request for ``method path?query`` with a JSON ``body``, made by ``user``."""
    data = b"" if body is None else json.dumps(body, default=str).encode()
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method.upper(), "PATH_INFO": path, "SCRIPT_NAME": "",
        "QUERY_STRING": urlencode({k: v for k, v in (query or {}).items() if v is not None}, doseq=True),
        "SERVER_NAME": _host(), "SERVER_PORT": "80", "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1", "HTTP_HOST": _host(), "HTTP_ACCEPT": "application/json",
        "CONTENT_TYPE": "application/json", "CONTENT_LENGTH": str(len(data)),
        "wsgi.input": io.BytesIO(data), "wsgi.url_scheme": "http", "wsgi.errors": io.StringIO(),
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
