"""minimcp inside a Django project: an installable app.

::

    # settings.py
    INSTALLED_APPS = [..., "minimcp.django"]
    MINIMCP = {"NAME": "My site", "MAX_WORKERS": 16}

    # urls.py  (/mcp and /mcp/ alike; then ``python manage.py migrate`` makes the app's tables)
    from minimcp.django import mcp
    urlpatterns = [..., path("mcp", include(mcp.urls))]

    # <any installed app>/mcp.py  (imported at start-up, as admin.py is)
    from minimcp.django import mcp

    @mcp.tool(permission_required="shop.change_order")
    def cancel_order(order_id: int, ctx: Context) -> str:
        order = Order.objects.get(pk=order_id, customer=ctx.user)
        ...

The endpoint runs behind the project's middleware: ``request.user`` from
``AuthenticationMiddleware`` (or the owner of an API token sent as ``Authorization: Bearer``, see
``APIToken``) is the caller, ``ctx.user`` in tools and the MCP principal that binds legacy sessions
and sealed ``requestState``. Anonymous requests are answered 401 unless ``LOGIN_REQUIRED`` is off.
A tool with ``permission_required`` is hidden from users without the permission and refuses their
calls. Tools run on worker threads; around every call Django's own rule closes or keeps the
thread's database connection (``close_old_connections``, honouring ``CONN_MAX_AGE``), and
``ATOMIC_REQUESTS`` does not reach them: use ``transaction.atomic()`` in the tool.

With ``"OAUTH": True`` a user pastes ``https://site/mcp/`` into an assistant, signs in on the
project's login page (``LOGIN_URL``), allows the assistant on a consent page (the template
``minimcp/consent.html``), and the assistant's token acts as that user; add
``path(".well-known/", include(mcp.well_known_urls))`` to the root URLconf so that clients find the
sign-in. Grants are kept in the database (digests only) and revoked by deleting them in the admin.

``MINIMCP`` settings: ``LOGIN_REQUIRED`` (default ``True``), ``ALLOWED_HOSTS`` (names the endpoint
answers besides loopback and the project's own ``ALLOWED_HOSTS``), ``ALLOWED_ORIGINS`` (other sites whose
pages may call the endpoint), ``API_TOKENS`` (default ``True``), ``OAUTH`` (default ``False``),
``BACKEND`` (a Redis URL such as ``"redis://localhost:6379/0"``: several processes or machines share the
sessions, questions and subscriptions), ``HTTP`` (endpoint options such as ``{"json_response": True}``),
``DRF_AUTHENTICATION`` (also accept what Django REST framework's authentication classes accept:
``True`` for the project's defaults, or a list of class paths; see ``minimcp.django.drf``); every
other key is an ``MCPServer`` argument in capitals (``NAME``,
``INSTRUCTIONS``, ``MAX_WORKERS``, ...). ``python manage.py mcp_stdio [--user NAME]`` serves the
same tools over stdio.
"""

from __future__ import annotations

import threading
from typing import Any

from minimcp.django.server import MCP

__all__ = ["MCP", "mcp"]

_HOST_KEYS = {"LOGIN_REQUIRED": "login_required", "ALLOWED_HOSTS": "allowed_hosts", "ALLOWED_ORIGINS": "allowed_origins",
              "API_TOKENS": "api_tokens", "OAUTH": "oauth", "HTTP": "http_options",
              "DRF_AUTHENTICATION": "drf_authentication"}
# _site_lock guards _site: the project's server is built once, from settings, on first use.
_site_lock = threading.Lock()
_site: MCP | None = None


def _from_settings() -> MCP:
    from django.conf import settings
    from django.core.exceptions import ImproperlyConfigured

    config: dict[str, Any] = dict(getattr(settings, "MINIMCP", {}))
    options = {_HOST_KEYS.get(key, key.lower()): value for key, value in config.items()}
    try:
        return MCP(**options)
    except TypeError as wrong:
        raise ImproperlyConfigured(f"settings.MINIMCP: {wrong}; see minimcp.django for the keys it takes") from None


def __getattr__(name: str) -> Any:
    """``mcp``: the project's server, built from ``settings.MINIMCP`` the first time it is named."""
    global _site
    if name != "mcp":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    with _site_lock:
        if _site is None:
            _site = _from_settings()
        return _site
