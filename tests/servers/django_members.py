"""A one-file Django project whose users are no database rows: a company's single sign-on proxy
names the member in ``X-Member`` (``email`` or ``email/device``), and a middleware of the project
makes ``request.user`` a ``Member`` with no ``pk``. The MCP endpoint knows members by email
(``principal=``). It has no ``CommonMiddleware``, so nothing but the endpoint checks ``Host``.

Run as ``python django_members.py``: it serves on a loopback port it picks and prints its URL.
``MEMBERS_ALLOWED_HOSTS`` (comma-separated) is the project's ``ALLOWED_HOSTS``,
``MEMBERS_MCP_HOSTS`` the endpoint's own ``allowed_hosts``, ``MEMBERS_DEBUG`` turns ``DEBUG`` on.
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable

from django.conf import settings


def _names(variable: str) -> list[str]:
    return [name for name in os.environ.get(variable, "").split(",") if name]


settings.configure(
    DEBUG=bool(os.environ.get("MEMBERS_DEBUG")),
    SECRET_KEY="members-test-only",
    ROOT_URLCONF=__name__,
    ALLOWED_HOSTS=_names("MEMBERS_ALLOWED_HOSTS"),
    MIDDLEWARE=[f"{__name__}.member_middleware"],
    INSTALLED_APPS=["django.contrib.auth", "django.contrib.contenttypes"],
    DATABASES={},
)

import django  # noqa: E402  (after settings.configure)

django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.urls import include, path  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from minimcp.django import MCP  # noqa: E402
from minimcp.httpd import WSGIServer  # noqa: E402
from minimcp.server.mcpserver import Context  # noqa: E402


class Member:
    """Who the sign-on proxy says is calling, from this device."""

    is_authenticated = True

    def __init__(self, email: str, device: str) -> None:
        self.email = email
        self.device = device


def member_middleware(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    def middleware(request: HttpRequest) -> HttpResponse:
        email, _, device = request.headers.get("X-Member", "").partition("/")
        request.user = Member(email, device or "desk") if email else None  # type: ignore[assignment]
        return get_response(request)

    return middleware


mcp = MCP("members", principal=lambda member: member.email, api_tokens=False, max_workers=4,
          max_calls_per_principal=1, allowed_hosts=_names("MEMBERS_MCP_HOSTS"))
#: Set by ``release``: the held call ends.
released = threading.Event()
#: How the last ``crunch`` ended.
outcome: dict[str, Any] = {}


class Seats(BaseModel):
    seats: int


@mcp.tool()
def whoami(ctx: Context) -> str:
    """The member's device, and the principal the call counts against."""
    return f"{ctx.user.device} as {ctx.request_context.transport.principal}"


@mcp.tool()
def book(ctx: Context) -> str:
    """Ask how many seats (a question that spans two requests in 2026-07-28), then book them."""
    answer = ctx.elicit("How many seats?", schema=Seats)
    return f"{answer.data.seats} seats for {ctx.user.email}" if answer.action == "accept" else answer.action


@mcp.tool()
def hold() -> str:
    """Keep one of the member's calls running until ``release``."""
    released.wait(30)
    return "held"


@mcp.tool()
def release() -> str:
    released.set()
    return "released"


@mcp.tool()
def crunch(seconds: float, ctx: Context) -> str:
    """Work quietly (no progress, no log) until cancelled or done; say which in ``outcome``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not ctx.cancelled:
        time.sleep(0.02)
    outcome["crunch"] = "cancelled" if ctx.cancelled else "done"
    return outcome["crunch"]


@mcp.tool()
def last_crunch() -> str:
    return str(outcome.get("crunch", "none"))


urlpatterns = [path("mcp", include(mcp.urls))]

if __name__ == "__main__":
    server = WSGIServer(get_wsgi_application(), "127.0.0.1", 0)
    print(f"members at http://127.0.0.1:{server.port}", flush=True)
    server.serve_forever()
