"""minimcp inside a Flask application: an extension in Flask's conventions.

::

    from minimcp.flask import MCP

    mcp = MCP(app)                      # or: mcp = MCP(); mcp.init_app(app, url_prefix="/mcp")

    @mcp.tool()
    def my_notes() -> list[str]:
        return [n.text for n in db.session.scalars(select(Note).where(Note.owner == current_user.id))]

``/mcp`` is an ordinary route of the application: its ``before_request`` hooks run and its login
applies. The logged-in user (Flask-Login's ``current_user``, or what ``user=`` returns) is the MCP
principal: a legacy session and a sealed ``requestState`` belong to that user, and nobody else can
continue them. When the application has a user system (Flask-Login, or ``user=``), a request with
no user is answered 401 unless ``login_required=False``.

Every tool, resolver, resource and prompt runs on a worker thread inside an application context of
its own and a request context rebuilt from the HTTP request that carried the call, so
``current_app``, ``g``, ``request``, ``session``, ``current_user`` and Flask-SQLAlchemy's
``db.session`` work, and ``teardown_appcontext`` (which returns ``db.session`` to the pool) runs
after each call. What the worker sees:

- ``request`` is a snapshot of the POST that carried the call (headers, cookies, URL, its JSON-RPC
  body). In the legacy era a call can outlive that POST: when a tool asks the user a question, the
  answer arrives on a later POST, yet ``request`` stays the one that started the call.
- ``g`` starts with a copy of what the request's hooks put there. Database objects in it belong to
  the request's session; load them again through ``db.session`` if the tool changes them.
  ``current_user`` is loaded again in the call's own context for the same reason.
- ``session`` is read from the cookie; changes made in a tool are not sent back.

``MCP(app, oauth=True)`` makes the site its own OAuth authorization server for the endpoint: a user
pastes ``https://site/mcp`` into an assistant, signs in on the site's login page (Flask-Login's
``login_view``, or ``login_url=``), allows the assistant on a consent page (the template
``minimcp/consent.html``, which the application may override), and the assistant's access token
then acts as that user: ``current_user`` in tools, and the MCP principal. Clients and grants are
kept in memory unless ``oauth_store=`` names a ``minimcp.hosts.site_auth.GrantStore``; the pending
request is signed with the application's ``SECRET_KEY``. See ``minimcp.hosts.site_auth``.

API tokens (``api_tokens=True``, the default, on a site that can load a user from its id): ``flask
mcp token USER`` prints one, ``--list`` and ``--revoke N`` manage them (``minimcp.flask.tokens``,
which says where they are kept); a request to the endpoint with ``Authorization: Bearer <token>``
acts as that user.

The sign-in documents name the site by ``SERVER_NAME`` (and ``PREFERRED_URL_SCHEME``) when the
application sets it, and are then public and cacheable. Otherwise they follow the request's host,
which the client chose, so they are served ``private`` with ``Vary: Host``: no shared cache keeps
one built from a forged ``Host`` for others (``minimcp.hosts.hosted.for_the_asker_only``; the Django host does
the same). A request over plain http under a public name gets a 400 saying that sign-in needs
HTTPS.

``flask mcp stdio`` serves the same tools over stdio; ``flask mcp inspect|call|install`` are the
``minimcp`` verbs for it (``minimcp.flask.commands``). There is no HTTP request there: each call
runs in an application context and a stand-in request context for the endpoint's URL, signed in
(Flask-Login) as the user given with ``--user ID``, anonymous otherwise: then every tool with an
``allowed=`` rule is hidden and refused.
"""

from __future__ import annotations

import contextlib
import hmac
import io
import secrets
from collections.abc import Iterator, Sequence
from typing import Any, Callable
from urllib.parse import urlencode

import click
from flask import (
    Blueprint,
    Flask,
    Response,
    current_app,
    g,
    has_app_context,
    has_request_context,
    redirect,
    render_template,
    request,
    session,
)
from flask.cli import AppGroup
from itsdangerous import BadSignature, URLSafeTimedSerializer
from werkzeug.wrappers import Request

from minimcp.flask.tokens import TokenStore, default_store, token_command
from minimcp.server.streamable_http import errors
from minimcp.server.streamable_http.exchange import HTTPResponse
from minimcp.hosts.hosted import (
    SIGN_IN_WITH_CLIENT,
    HostedServer,
    api_token_way,
    for_the_asker_only,
    forbidden_origin,
    host_request,
    origin_allowed,
    principal_of,
    sign_in_unavailable,
    too_large,
    unauthorized,
)
from minimcp.hosts.site_auth import (
    CONSENT_PATH,
    ENDPOINT_PATHS,
    GrantStore,
    MemoryGrantStore,
    TEMPLATES,
    SiteAuthorizationServer,
    bearer_token,
    registration_limiter,
)

__all__ = ["MCP"]

#: Flask-Login keeps the request's user here; the worker loads its own, bound to its own db.session.
_FLASK_LOGIN_USER = "_login_user"
#: The user an OAuth access token signed in, for one request to the endpoint (reloaded on the worker).
_TOKEN_USER = "_minimcp_token_user"
#: The session key of the consent form's CSRF token.
_CSRF_KEY = "_minimcp_csrf"


class MCP(HostedServer):
    """An MCP server that is part of a Flask application.

    ``user`` returns the caller (a user object, or ``None`` for nobody); without it the caller is
    Flask-Login's ``current_user`` when the application uses Flask-Login. ``login_required``
    (default: whenever there is a way to know the user) answers 401 to requests without one.
    ``allowed_origins`` lists other sites whose pages may call the endpoint from a browser.
    ``oauth=True`` lets MCP clients sign in with the site's own login (see the module's docs);
    ``login_url`` is where a visitor signs in when the site does not use Flask-Login's
    ``login_view`` (``?next=`` brings them back), ``load_user`` turns a user id back into a user
    when the site does not use Flask-Login's ``user_loader``. ``api_tokens`` lets users' API tokens
    (``flask mcp token``) in, kept by ``token_store`` (default: a SQLite file in the instance
    folder, see ``minimcp.flask.tokens``). ``http_options`` configure the endpoint
    (``json_response``, ``session_idle_timeout``, ...); every other keyword configures the server,
    as for ``MCPServer``.
    """

    def __init__(self, app: Flask | None = None, name: str | None = None, *, url_prefix: str = "/mcp",
                 user: Callable[[], Any] | None = None, login_required: bool | None = None,
                 allowed_origins: Sequence[str] = (), oauth: bool = False, login_url: str | None = None,
                 load_user: Callable[[str], Any] | None = None, oauth_store: GrantStore | None = None,
                 api_tokens: bool = True, token_store: TokenStore | None = None,
                 http_options: dict[str, Any] | None = None, **options: Any) -> None:
        if isinstance(app, str):
            raise TypeError(f"MCP's first argument is the Flask app; name the server with MCP(app, name={app!r})")
        super().__init__(name, **options)
        self._backend_given = options.get("backend") is not None
        self.url_prefix = url_prefix
        self.login_required = login_required
        self.allowed_origins = list(allowed_origins)
        self._user_rule = user
        self.oauth = oauth
        self.login_url = login_url
        self._user_loader = load_user
        self._oauth_store = oauth_store
        self.api_tokens = api_tokens
        self._token_store = token_store
        self._stdio_user: str | None = None  # the user id ``flask mcp stdio --user`` runs as
        self._http_options = dict(http_options or {})
        self._endpoint = self.endpoint(**self._http_options)
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask, url_prefix: str | None = None) -> None:
        """Serve the endpoint at ``url_prefix`` of ``app`` and add the ``flask mcp`` commands; the
        shared state goes to ``app.config["MINIMCP_BACKEND"]`` (a Redis URL) unless ``backend=`` was given."""
        prefix = "/" + (url_prefix or self.url_prefix).strip("/")
        if app.config.get("MINIMCP_BACKEND") is not None and not self._backend_given:
            self.use_backend(app.config["MINIMCP_BACKEND"])
            self._endpoint = self.endpoint(**self._http_options)  # its sessions then live in the backend
        app.extensions["minimcp"] = self
        app.add_url_rule(prefix, endpoint="minimcp", view_func=self._view, methods=["GET", "POST", "DELETE"],
                         strict_slashes=False)
        csrf = app.extensions.get("csrf")  # Flask-WTF: an MCP client posts JSON, not the site's forms
        if csrf is not None:
            csrf.exempt(self._view)
        if self.oauth:
            self._add_authorization_server(app, prefix)
        if self.oauth or self.api_tokens:
            # First of the application's hooks, so that its own see the token's user as current_user.
            app.before_request_funcs.setdefault(None, []).insert(0, self._sign_in_token)
        app.cli.add_command(self._commands())

    def _add_authorization_server(self, app: Flask, prefix: str) -> None:
        """The site as its own authorization server: metadata, the AS tier's endpoints and the
        consent page, in a blueprint whose template the application may override."""
        app.extensions["minimcp.grants"] = self._oauth_store if self._oauth_store is not None else MemoryGrantStore()
        app.extensions["minimcp.registrations"] = registration_limiter()
        pages = Blueprint("minimcp_oauth", __name__, template_folder=TEMPLATES)
        paths = [prefix + path for path in ENDPOINT_PATHS]
        paths += [f"/.well-known/oauth-protected-resource{prefix}", "/.well-known/oauth-protected-resource",
                  f"/.well-known/oauth-authorization-server{prefix}"]
        for index, path in enumerate(paths):
            pages.add_url_rule(path, endpoint=f"oauth{index}", view_func=self._oauth_view,
                               methods=["GET", "POST", "OPTIONS"])
        pages.add_url_rule(prefix + CONSENT_PATH, endpoint="consent", view_func=self._consent_view,
                           methods=["GET", "POST"])
        app.register_blueprint(pages)
        csrf = app.extensions.get("csrf")  # the consent form carries a token of its own; the rest is for clients
        if csrf is not None:
            csrf.exempt(pages)

    # --- who is calling ------------------------------------------------------------------------
    def host_user(self) -> Any:
        if not has_app_context():
            return None
        if has_request_context() and g.get(_TOKEN_USER) is not None:
            return g.get(_TOKEN_USER)
        if self._stdio_user is not None and not has_request_context():
            return self._load(self._stdio_user)
        if self._user_rule is not None:
            return self._user_rule()
        if has_request_context() and hasattr(current_app, "login_manager"):
            from flask_login import current_user

            user = current_user._get_current_object()
            return user if user is not None and user.is_authenticated else None
        return None

    def _needs_login(self) -> bool:
        if self.login_required is not None:
            return self.login_required
        return self._user_rule is not None or hasattr(current_app, "login_manager")

    # --- the endpoint --------------------------------------------------------------------------
    def _view(self) -> Response:
        if not origin_allowed(request.environ, self.allowed_origins):
            return _response(forbidden_origin())
        principal = principal_of(self.host_user())
        if principal is None and self._needs_login():
            return _response(self._unauthorized())
        if (request.content_length or 0) > self._endpoint.max_request_body_size:
            return _response(too_large())
        native = request._get_current_object()  # type: ignore[attr-defined]
        return _response(self._endpoint.handle(host_request(request.environ, request.get_data(cache=True),
                                                            principal, native)))

    def _unauthorized(self) -> HTTPResponse:
        """The 401, offering the ways in this site has: its sign-in, its API tokens, its login."""
        ways = []
        challenge = None
        if self.oauth:
            ways.append(SIGN_IN_WITH_CLIENT)
            server = self._authorization_server()
            if sign_in_unavailable(server.issuer) is None:
                sent = bearer_token(request.headers.get("Authorization", "")) is not None
                challenge = server.www_authenticate("invalid_token" if sent else None)
        if self._takes_api_tokens():
            ways.append(api_token_way("flask mcp token USER"))
        return unauthorized(current_app.name, challenge, ways)

    # --- signing in with the site's login (oauth=True) ------------------------------------------
    def _authorization_server(self) -> SiteAuthorizationServer:
        return SiteAuthorizationServer(current_app.extensions["minimcp.grants"], _Signer(current_app.secret_key),
                                       self._site_url(), request.script_root + self.url_prefix, self.name,
                                       current_app.extensions["minimcp.registrations"])

    def _site_url(self) -> str:
        """The site's own name when the application configures one, else the request's host."""
        name = current_app.config.get("SERVER_NAME")
        if name:
            return f"{current_app.config.get('PREFERRED_URL_SCHEME') or 'http'}://{name}/"
        return request.host_url

    def _oauth_view(self) -> Any:
        server = self._authorization_server()
        refused = sign_in_unavailable(server.issuer)
        if refused is not None:
            return _response(refused)
        reply = server.answer(Request(request.environ))
        if reply is None:
            return "Not found", errors.NotFound.status
        return reply if current_app.config.get("SERVER_NAME") else for_the_asker_only(reply)

    def _consent_view(self) -> Any:
        """The page where a signed-in user allows or denies an MCP client."""
        server = self._authorization_server()
        sealed = request.values.get("request", "")
        pending = server.pending(sealed)
        if pending is None:
            return _page("This sign-in link has expired or was changed. Start again from your MCP client.")
        user = self.host_user()
        if principal_of(user) is None:
            return self._to_login()
        if request.method == "POST":
            expected = session.get(_CSRF_KEY, "")
            if not expected or not hmac.compare_digest(expected, request.form.get("csrf_token", "")):
                return _page("The form was not sent from this site's page. Reload it and answer again.")
            allowed = request.form.get("decision") == "allow"
            answer = redirect(server.decide(pending, principal_of(user) if allowed else None))
            answer.headers["Cache-Control"] = "no-store"
            return answer
        token = session.setdefault(_CSRF_KEY, secrets.token_urlsafe(32))
        page = render_template("minimcp/consent.html", pending=pending, user=user, username=str(user), sealed=sealed,
                               csrf_field="csrf_token", csrf_token=token, site=current_app.name)
        return page, {"Cache-Control": "no-store", "X-Frame-Options": "DENY"}

    def _to_login(self) -> Any:
        if self.login_url is not None:
            return redirect(f"{self.login_url}?{urlencode({'next': request.full_path})}")
        manager = getattr(current_app, "login_manager", None)
        if manager is None:
            raise RuntimeError("MCP(oauth=True) sends visitors to the site's login page: use Flask-Login with a "
                               "login_view, or give MCP(login_url=...)")
        return manager.unauthorized()

    def _sign_in_token(self) -> None:
        """A request to the endpoint with an access token this site issued, or one of its users'
        API tokens, acts as the token's user."""
        if request.endpoint != "minimcp":
            return
        token = bearer_token(request.headers.get("Authorization", ""))
        user_id = self._token_subject(token) if token else None
        if user_id is None:
            return
        user = self._load(user_id)
        if user is None or not getattr(user, "is_active", True):
            return
        setattr(g, _TOKEN_USER, user)
        if hasattr(current_app, "login_manager"):
            setattr(g, _FLASK_LOGIN_USER, user)

    def _token_subject(self, token: str) -> str | None:
        if self.oauth:
            access = self._authorization_server().load_access_token(token)
            if access is not None and access.subject is not None:
                return access.subject
        return self.tokens.user_id_for(token) if self._takes_api_tokens() else None

    def _load(self, user_id: str) -> Any:
        return self._user_loader(user_id) if self._user_loader is not None else _load_user(user_id)

    # --- API tokens ----------------------------------------------------------------------------
    @property
    def tokens(self) -> TokenStore:
        """The current application's API tokens (``token_store``, or its SQLite file)."""
        app = current_app._get_current_object()  # type: ignore[attr-defined]
        store = app.extensions.get("minimcp.tokens")
        if store is None:
            store = app.extensions["minimcp.tokens"] = self._token_store or default_store(app)
        return store

    def _takes_api_tokens(self) -> bool:
        """Whether a token's user can be loaded: API tokens need the site's way from an id to a user."""
        manager = getattr(current_app, "login_manager", None)
        return self.api_tokens and (self._user_loader is not None or getattr(manager, "_user_callback", None) is not None)

    # --- where the calls run -------------------------------------------------------------------
    def call_scope(self) -> contextlib.AbstractContextManager[Any]:
        if has_request_context():
            environ = dict(request.environ)
            body = request.get_data(cache=True)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            values = {k: v for k, v in vars(g).items() if k not in (_FLASK_LOGIN_USER, _TOKEN_USER)}
            return _request_scope(current_app._get_current_object(), environ, values,  # type: ignore[attr-defined]
                                  self._sign_in_token if self.oauth or self.api_tokens else None)
        if has_app_context():
            return _command_scope(current_app._get_current_object(), self.url_prefix,  # type: ignore[attr-defined]
                                  self._stdio_user, self._load)
        return contextlib.nullcontext()

    # --- the command line ----------------------------------------------------------------------
    def _commands(self) -> click.Group:
        group = AppGroup("mcp", help="Serve this application's MCP tools.")

        @group.command("stdio")
        @click.option("--user", "user_id", default=None, help="Run every call as this user id.")
        def stdio(user_id: str | None) -> None:
            """Serve the tools over stdin/stdout (for an MCP client that starts this command)."""
            if user_id is not None and self._load(user_id) is None:
                raise click.BadParameter(f"no user with id {user_id!r}", param_hint="--user")
            self._stdio_user = user_id
            self.run("stdio")

        group.add_command(token_command(self))
        from minimcp.flask.commands import add_commands  # inspect, call, install: minimcp's verbs for this app

        add_commands(group, self)
        return group


@contextlib.contextmanager
def _request_scope(app: Flask, environ: dict[str, Any], values: dict[str, Any],
                   sign_in: Callable[[], None] | None) -> Iterator[None]:
    """On the worker: an app context of the call's own (its ``g`` seeded with ``values``) and a
    request context over ``environ`` (where ``sign_in`` loads an access token's user again);
    leaving them runs the teardown functions."""
    with app.app_context():
        vars(g).update(values)
        with app.request_context(environ):
            if sign_in is not None:
                sign_in()
            yield


@contextlib.contextmanager
def _command_scope(app: Flask, path: str, user_id: str | None, load: Callable[[str], Any]) -> Iterator[None]:
    """On the worker, for a call with no HTTP request (``flask mcp stdio``): an app context and a
    stand-in request for ``path``, signed in as ``user_id`` when there is one. The user is loaded
    there, with the call's own ``db.session``, and put where Flask-Login looks for the request's
    user: not through ``login_user``, which writes a session cookie that nobody receives here (and
    needs a ``SECRET_KEY`` the site may not have)."""
    with app.app_context(), app.test_request_context(path):
        if user_id is not None:
            setattr(g, _FLASK_LOGIN_USER, load(user_id))
        yield


def _load_user(user_id: str) -> Any:
    """The user Flask-Login's ``user_loader`` gives for ``user_id``."""
    manager = getattr(current_app, "login_manager", None)
    loader = getattr(manager, "_user_callback", None)
    if loader is None:
        raise click.UsageError("finding a user by id needs Flask-Login's user_loader on this application "
                               "(or MCP(load_user=...))")
    return loader(user_id)


class _Signer:
    """The consent page's signed request, with the application's secret key (itsdangerous)."""

    def __init__(self, secret_key: Any) -> None:
        if not secret_key:
            raise RuntimeError("MCP(oauth=True) signs sign-in requests with the application's SECRET_KEY: set it")
        self._serializer = URLSafeTimedSerializer(secret_key, salt="minimcp.oauth.consent")

    def sign(self, data: dict[str, Any]) -> str:
        return self._serializer.dumps(data)

    def unsign(self, text: str, max_age: int) -> dict[str, Any] | None:
        try:
            data = self._serializer.loads(text, max_age=max_age)
        except BadSignature:
            return None
        return data if isinstance(data, dict) else None


def _page(text: str) -> tuple[str, int, dict[str, str]]:
    """A consent page's refusal: a request this site cannot answer as sent, said in words."""
    return text, errors.BadHostRequest.status, {"Content-Type": "text/plain; charset=utf-8", "Cache-Control": "no-store"}


def _response(answer: HTTPResponse) -> Response:
    return Response(answer.body, status=answer.status, headers=answer.headers, direct_passthrough=True)
