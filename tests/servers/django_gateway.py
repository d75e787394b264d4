"""A one-file Django project whose MCP endpoint is also a gateway: it mounts a proxy of the billing
service (``GATEWAY_UPSTREAM``, a URL) under ``billing``, which each user reaches with their own
billing token, and lets staff see and call its tools (``refund`` only with ``auth.change_user``).

Its users are rows of its SQLite database (``GATEWAY_DATABASE``): alice (a superuser), carol
(staff) and bob. ``POST /login/`` (``username``, ``password``) signs in with the site's session
cookie; each user's API token is printed at start-up. Run as ``python django_gateway.py``: it
migrates, serves on a loopback port it picks and prints ``gateway at http://127.0.0.1:PORT``.
"""

from __future__ import annotations

import os

from django.conf import settings

settings.configure(
    SECRET_KEY="gateway-test-only",
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=["127.0.0.1"],
    MIDDLEWARE=["django.contrib.sessions.middleware.SessionMiddleware",
                "django.contrib.auth.middleware.AuthenticationMiddleware"],
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes", "django.contrib.sessions",
                    "minimcp.django"],
    DATABASES={"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["GATEWAY_DATABASE"]}},
    DEFAULT_AUTO_FIELD="django.db.models.AutoField",
)

import django  # noqa: E402  (after settings.configure)

django.setup()

from typing import Any  # noqa: E402

from django.contrib.auth import authenticate, get_user_model, login  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import connections  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.urls import include, path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402

from minimcp.django import MCP  # noqa: E402
from minimcp.django.models import APIToken  # noqa: E402
from minimcp.httpd import WSGIServer  # noqa: E402
from minimcp.server import create_proxy  # noqa: E402
from minimcp.server.mcpserver import Context  # noqa: E402


def billing_token(user: Any) -> dict[str, str] | None:
    """The user's own credential at the billing service (a real site would keep it per user)."""
    return {"Authorization": f"Bearer billing-{user.username}"} if user is not None else None


mcp = MCP("site", max_workers=4)
billing = create_proxy({"mcpServers": {"billing": {"url": os.environ["GATEWAY_UPSTREAM"], "mode": "legacy"}}},
                       credentials={"billing": billing_token})
mcp.mount(billing, namespace="billing")
mcp.allow("billing_*", allowed=lambda user: user.is_staff, requirement="staff status")
mcp.allow("billing_refund", permission_required="auth.change_user")


@mcp.tool()
def me(ctx: Context) -> str:
    """Who the site says is calling."""
    return str(ctx.user.username)


@csrf_exempt
def sign_in(request: HttpRequest) -> HttpResponse:
    user = authenticate(request, username=request.POST.get("username"), password=request.POST.get("password"))
    if user is None:
        return HttpResponse("wrong username or password", status=403)
    login(request, user)
    return HttpResponse("signed in")


urlpatterns = [path("mcp", include(mcp.urls)), path("login/", sign_in)]

if __name__ == "__main__":
    call_command("migrate", verbosity=0)
    users = get_user_model()
    if not users.objects.exists():
        users.objects.create_superuser("alice", password="alice")
        users.objects.create_user("carol", password="carol", is_staff=True)
        users.objects.create_user("bob", password="bob")
    for name in ("alice", "carol", "bob"):
        print(f"{name}'s API token: {APIToken.create(users.objects.get(username=name), 'test')}", flush=True)
    connections.close_all()
    server = WSGIServer(get_wsgi_application(), "127.0.0.1", 0)
    print(f"gateway at http://127.0.0.1:{server.port}", flush=True)
    server.serve_forever()
