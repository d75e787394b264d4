"""The MCP server of a Django project, its view, and where its calls run."""

from __future__ import annotations

import contextlib
import contextvars
import json
import logging
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Callable, TypeVar

from django.db import DatabaseError, close_old_connections, connections, router
from django.http import HttpRequest, HttpResponse, HttpResponseBase, StreamingHttpResponse
from django.urls import re_path, reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect

from minimcp.django.calls import coming_from, origin
from minimcp.hosts.hosted import (
    SIGN_IN_WITH_CLIENT,
    AccessRule,
    HostedServer,
    UnidentifiedUser,
    api_token_way,
    host_request,
    misconfigured,
    rebinding_refusal,
    sign_in_unavailable,
    unauthorized,
)
from minimcp.server.edges.http import errors
from minimcp.server.edges.http.exchange import HTTPResponse, content
from minimcp.server.edges.http.options import HTTPOptions
from minimcp.types import INTERNAL_ERROR
from minimcp.hosts.site_auth import CONSENT_PATH, ENDPOINT_PATHS, SiteAuthorizationServer, bearer_token

F = TypeVar("F", bound=Callable[..., Any])

logger = logging.getLogger("minimcp.django")

#: The Django user of the call being served: set by the view on the request thread (listings run
#: there) and by the call scope on the worker (tools run there).
_user: contextvars.ContextVar[Any] = contextvars.ContextVar("minimcp_django_user", default=None)


class MCP(HostedServer):
    """An MCP server that is part of a Django project: ``path("mcp", include(mcp.urls))``.

    The view runs behind the project's middleware; ``request.user`` (from
    ``AuthenticationMiddleware``), or the owner of an API token sent as ``Authorization: Bearer``,
    is the caller. ``login_required`` answers 401 to anonymous requests. ``oauth`` lets MCP clients
    sign in with the project's own login page and a consent page (``minimcp.django.oauth``); its
    metadata lives at the site's root, so the project also includes ``mcp.well_known_urls``.
    The endpoint answers only loopback names, the project's ``ALLOWED_HOSTS`` (with Django's
    rules: ``.example.com`` for its subdomains, ``*`` for any) and ``allowed_hosts``, whether or not
    a middleware asked Django to check the ``Host`` (DNS-rebinding protection, as minimcp's own
    server has it). ``allowed_origins`` lists
    other sites whose pages may call the endpoint from a browser. ``principal`` names a user by
    something else than its ``pk`` (``principal=lambda user: user.email``), or one that has no
    ``pk`` (a user object of the project's own authentication). ``http_options`` configure the
    endpoint (an ``HTTPOptions``, or its fields by name: ``json_response``, ``session_idle_timeout``, ...); ``drf_authentication`` also accepts
    what DRF's authentication classes accept (``True``: the project's defaults; or class paths, see
    ``minimcp.django.drf``); other keywords configure the server.
    """

    def __init__(self, name: str | None = None, *, login_required: bool = True, allowed_hosts: Sequence[str] = (),
                 allowed_origins: Sequence[str] = (), api_tokens: bool = True, oauth: bool = False, http_options: HTTPOptions | Mapping[str, Any] | None = None,
                 drf_authentication: bool | Sequence[str] = False, **options: Any) -> None:
        super().__init__(name, **options)
        self.login_required = login_required
        self.oauth = oauth
        self.allowed_hosts = list(allowed_hosts)
        self.allowed_origins = list(allowed_origins)
        self.api_tokens = api_tokens
        self.drf_authentication = drf_authentication
        self._endpoint = self.endpoint(http_options)

    # --- registering ---------------------------------------------------------------------------
    # MCPServer.tool's options are passed on by keyword only, hence the narrower signature
    def tool(self, name: str | None = None, *,  # type: ignore[override]
             permission_required: str | Sequence[str] | None = None, allowed: AccessRule | None = None,
             **options: Any) -> Callable[[F], F]:
        """Register a tool; ``permission_required="app.codename"`` (or several) limits it to users
        with those permissions: the others do not see it and their calls are refused."""
        if permission_required is None:
            return super().tool(name, allowed=allowed, **options)
        rule, words = _permission_rule(permission_required, allowed)
        return super().tool(name, allowed=rule, requirement=words, **options)

    def allow(self, pattern: str, allowed: AccessRule | None = None,
              requirement: str | None = None, *, permission_required: str | Sequence[str] | None = None) -> None:
        """Limit every tool whose name matches ``pattern`` (``"billing_*"``), a mounted server's
        (a proxy's upstream tools) included, to users with ``permission_required`` and whom
        ``allowed`` admits (``HostedServer.allow``)."""
        if permission_required is not None:
            allowed, words = _permission_rule(permission_required, allowed)
            requirement = requirement or words
        if allowed is None:
            raise TypeError("allow() needs permission_required=, allowed=, or both")
        super().allow(pattern, allowed, requirement)

    # --- who is calling ------------------------------------------------------------------------
    def host_user(self) -> Any:
        return _user.get()

    @contextlib.contextmanager
    def acting_as(self, user: Any) -> Iterator[None]:
        """Serve what happens on this thread as ``user`` (``manage.py mcp_stdio --user``)."""
        token = _user.set(user)
        try:
            yield
        finally:
            _user.reset(token)

    # --- the endpoint --------------------------------------------------------------------------
    @property
    def urls(self) -> tuple[list[Any], str]:
        """For ``path("mcp", include(mcp.urls))``: the endpoint at ``/mcp`` and ``/mcp/`` alike (URL
        name ``minimcp:endpoint``) and, with ``oauth``, the authorization endpoints and consent page
        under it. Both spellings are served because a client posts to the URL it was given, and
        the redirect ``APPEND_SLASH`` answers cannot carry a POST (Django answers a 500 in DEBUG).
        Mounted as ``path("mcp/", ...)``, only ``/mcp/`` is served (``manage.py check`` says so)."""
        patterns = [re_path(_under(""), self.view(), name="endpoint")]
        if self.oauth:
            oauth = csrf_exempt(self._oauth_view)  # clients post these; none is a form of the site's
            patterns += [re_path(_under(name), oauth, name=name.strip("/")) for name in ENDPOINT_PATHS]
            # A form of the site's: CSRF-protected by itself, whether or not the project runs CsrfViewMiddleware.
            patterns.append(re_path(_under(CONSENT_PATH), csrf_protect(self._consent_view), name="consent"))
        return patterns, "minimcp"

    @property
    def well_known_urls(self) -> tuple[list[Any], str]:
        """For ``path(".well-known/", include(mcp.well_known_urls))``: the metadata documents that
        lead an MCP client from the endpoint to the sign-in (RFC 9728, RFC 8414)."""
        documents = r"^oauth-(protected-resource|authorization-server)(/.*)?$"
        return [re_path(documents, self._oauth_view, name="metadata")], "minimcp_well_known"

    def view(self) -> Callable[[HttpRequest], HttpResponseBase]:
        """The endpoint as a Django view (CSRF-exempt: MCP clients post JSON, not the site's forms)."""

        @csrf_exempt
        def mcp_endpoint(request: HttpRequest) -> HttpResponseBase:
            return self._serve(request)

        return mcp_endpoint

    def _serve(self, request: HttpRequest) -> HttpResponseBase:
        return _migrated(lambda: self._answer(request))

    def _answer(self, request: HttpRequest) -> HttpResponseBase:
        refused = rebinding_refusal(request.META, self._own_hosts(request), self.allowed_origins,
                                    "settings.ALLOWED_HOSTS, or MINIMCP['ALLOWED_HOSTS'] / MCP(allowed_hosts=[...])")
        if refused is not None:
            return _response(refused)
        user = getattr(request, "user", None)
        token = bearer_token(request.headers.get("Authorization", ""))
        if token is not None and (self.oauth or self.api_tokens):
            user = self._token_user(request, token)
            if user is None and not self.drf_authentication:
                return self._unauthorized(request, "invalid_token")
        try:
            principal = self.principal_of(user)
            if principal is None and self.drf_authentication:
                from minimcp.django.drf import authenticate

                user = authenticate(request, self.drf_authentication)
                principal = self.principal_of(user)
        except UnidentifiedUser as problem:
            return _response(misconfigured(problem))
        if principal is None and self.login_required:
            return self._unauthorized(request, None)
        with self.acting_as(user), coming_from(request.META):
            return _response(self._endpoint.handle(host_request(request.META, request.body, principal, request)))

    def _own_hosts(self, request: HttpRequest) -> list[str]:
        """The names this project answers to besides loopback: ``allowed_hosts``, and the request's
        own ``Host`` when ``ALLOWED_HOSTS`` admits it. Django checks ``ALLOWED_HOSTS`` only when
        something asks it for the host (``CommonMiddleware`` does, a bare project may not), so the
        endpoint asks by itself, of the ``Host`` the client sent (a client sets ``X-Forwarded-Host``
        as it likes, and a rebound page is a client of its own origin)."""
        from django.conf import settings
        from django.http.request import split_domain_port, validate_host

        host = request.META.get("HTTP_HOST", "")
        patterns = settings.ALLOWED_HOSTS
        if settings.DEBUG and not patterns:  # Django's own default while debugging
            patterns = [".localhost", "127.0.0.1", "[::1]"]
        domain, _ = split_domain_port(host)
        return [*self.allowed_hosts, host] if domain and validate_host(domain, patterns) else list(self.allowed_hosts)

    def _token_user(self, request: HttpRequest, token: str) -> Any:
        """The user an access token of this site's sign-in, or else an API token, acts as."""
        if self.oauth:
            from minimcp.django.oauth import token_user

            user = token_user(self._authorization_server(request), token)
            if user is not None:
                return user
        if self.api_tokens:
            from minimcp.django.models import APIToken

            return APIToken.user_for(token)
        return None

    def _unauthorized(self, request: HttpRequest, error: str | None) -> HttpResponseBase:
        """The 401, offering the ways in this project has: its sign-in, its API tokens, its login."""
        ways = []
        challenge = None
        if self.oauth:
            ways.append(SIGN_IN_WITH_CLIENT)
            server = self._authorization_server(request)
            if sign_in_unavailable(server.issuer) is None:
                challenge = server.www_authenticate(error)
        if self.api_tokens:
            ways.append(api_token_way("python manage.py mcp_token USERNAME") + " or in the admin")
        return _response(unauthorized(request.get_host(), challenge, ways))

    # --- signing in with the project's login (oauth) ---------------------------------------------
    def _authorization_server(self, request: HttpRequest) -> SiteAuthorizationServer:
        from minimcp.django.oauth import authorization_server

        # The resource is the slashed URL however the endpoint is mounted: what a client is given to
        # paste, and what sign-ins made before the endpoint answered at both stay bound to.
        return authorization_server(request, reverse("minimcp:endpoint").rstrip("/") + "/", self.name)

    def _oauth_view(self, request: HttpRequest, *args: Any) -> HttpResponseBase:
        from minimcp.django.oauth import answer

        server = self._authorization_server(request)
        refused = sign_in_unavailable(server.issuer)
        if refused is not None:
            return _response(refused)
        return _migrated(lambda: answer(server, request))

    def _consent_view(self, request: HttpRequest) -> HttpResponseBase:
        from minimcp.django.oauth import consent

        return _migrated(lambda: consent(self._authorization_server(request), request))

    # --- where the calls run -------------------------------------------------------------------
    def call_scope(self) -> contextlib.AbstractContextManager[Any]:
        return _call_scope(self, _user.get(), origin())


def _permission_rule(permission_required: str | Sequence[str],
                     allowed: AccessRule | None) -> tuple[AccessRule, str]:
    """The rule of ``permission_required`` (and ``allowed``, when given), and its words."""
    perms = (permission_required,) if isinstance(permission_required, str) else tuple(permission_required)
    words = f"the permission {perms[0]}" if len(perms) == 1 else "the permissions " + ", ".join(perms)

    def rule(user: Any) -> bool:
        return user is not None and user.has_perms(perms) and (allowed is None or allowed(user))

    return rule, words


@contextlib.contextmanager
def _call_scope(server: MCP, user: Any, meta: Mapping[str, Any] | None) -> Iterator[None]:
    """On the worker: the caller as ``ctx.user``, where the call came from (``minimcp.django.calls``),
    and Django's rule for database connections around the call, as around a request
    (``close_old_connections`` honours ``CONN_MAX_AGE`` and drops a connection left broken), so a
    worker thread never keeps one longer than the project allows."""
    with server.acting_as(user), coming_from(meta):
        close_old_connections()
        try:
            yield
        finally:
            close_old_connections()


def _under(name: str) -> str:
    """The pattern of ``name`` under the endpoint's prefix, with or without a slash between them:
    ``path("mcp", include(mcp.urls))`` serves ``/mcp``, ``/mcp/`` and ``/mcp/authorize``;
    ``path("mcp/", ...)`` serves the slashed ones. (The slash is in a group: Django's check warns
    of a pattern that starts with ``^/``, a mistake everywhere but here.)"""
    return rf"^(?:/)?{re.escape(name.strip('/'))}\Z"


def _migrated(answer: Callable[[], HttpResponseBase]) -> HttpResponseBase:
    """``answer()``, or, when it fails because minimcp's tables are not there, the answer that says
    what to do (``python manage.py migrate``) instead of a bare 500."""
    try:
        return answer()
    except DatabaseError:
        missing = _missing_tables()
        if not missing:
            raise
        message = (f"This site's MCP tables ({', '.join(missing)}) are missing from its database: "
                   "run `python manage.py migrate`")
        logger.error(message)
        body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": INTERNAL_ERROR, "message": message}})
        return _response(content(body.encode(), errors.UNAVAILABLE, "application/json"))


def _missing_tables() -> list[str]:
    """minimcp's tables that the database does not have: ``manage.py migrate`` was not run."""
    from django.apps import apps

    missing = []
    for model in apps.get_app_config("minimcp").get_models():
        try:
            present = connections[router.db_for_read(model)].introspection.table_names()
        except DatabaseError:  # a connection the first error left unusable: nothing known
            return []
        if model._meta.db_table not in present:
            missing.append(model._meta.db_table)
    return missing


def _response(answer: HTTPResponse) -> HttpResponseBase:
    headers = dict(answer.headers)
    response: HttpResponseBase
    if headers.get("Content-Type") == "text/event-stream":
        response = StreamingHttpResponse(answer.body, status=answer.status)
    else:
        response = HttpResponse(b"".join(answer.body), status=answer.status)
    for name, value in headers.items():
        response[name] = value
    return response
