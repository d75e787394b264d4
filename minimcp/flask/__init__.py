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

Every tool, resolver, resource and prompt runs in an application context of its own, on the
thread that runs it (a worker, or the request's own when nothing streams), and a request context
rebuilt from the HTTP request that carried the call; the application's ``before_request`` hooks run
again there, and its ``teardown_appcontext`` functions when the call ends. So ``current_app``,
``g``, ``request``, ``session``, ``current_user`` and Flask-SQLAlchemy's ``db.session`` work, and
whatever the hooks open in ``g`` (a ``sqlite3`` connection, a user row) is the call's own, made and
closed on its thread: never one another thread opened. What the worker sees:

- ``request`` is a snapshot of the POST that carried the call (headers, cookies, URL, its JSON-RPC
  body). In the legacy era a call can outlive that POST: when a tool asks the user a question, the
  answer arrives on a later POST, yet ``request`` stays the one that started the call.
- ``g`` is what the hooks put there for this call; ``current_user`` is loaded again in it.
- ``session`` is read from the cookie; changes made in a tool are not sent back.

The caller is named by a key of its user object that is the same on every request
(``minimcp.hosts.hosted.principal_of``: ``get_id()``, ``pk``, ``id``, a row's ``"id"``), or by
``principal=lambda user: ...``; a user with none is refused at the first request, saying so.

The endpoint answers only loopback names and the site's own (``allowed_hosts=``, ``SERVER_NAME``,
``TRUSTED_HOSTS``): DNS-rebinding protection, as minimcp's own server has it.

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
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Callable
from urllib.parse import urlencode, urlsplit

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
    url_for,
)
from flask.cli import AppGroup
from itsdangerous import BadSignature, URLSafeTimedSerializer
from werkzeug.wrappers import Request

from minimcp.flask.commands import add_commands
from minimcp.flask.tokens import TokenStore, default_store, token_command
from minimcp.server.edges.http import errors
from minimcp.server.edges.http.exchange import HTTPResponse
from minimcp.server.edges.http.options import HTTPOptions
from minimcp.hosts.hosted import (
    SIGN_IN_WITH_CLIENT,
    HostedServer,
    UnidentifiedUser,
    api_token_way,
    display_name,
    for_the_asker_only,
    host_request,
    misconfigured,
    rebinding_refusal,
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

#: Flask-Login keeps the request's user here.
_FLASK_LOGIN_USER = "_login_user"
#: The user minimcp signed in itself (an access or API token's, ``flask mcp stdio --user``'s) in one
#: app context; each call's context loads its own.
_SIGNED_IN = "_minimcp_user"
#: The session key of the consent form's CSRF token.
_CSRF_KEY = "_minimcp_csrf"


class MCP(HostedServer):
    """An MCP server that is part of a Flask application.

    ``user`` returns the caller (a user object, or ``None`` for nobody); without it the caller is
    Flask-Login's ``current_user`` when the application uses Flask-Login. ``principal`` names a
    user that has no stable id of its own (``get_id()``, ``pk``, ``id``, an ``"id"`` key).
    ``allowed_hosts`` are the names the endpoint answers besides loopback, ``SERVER_NAME`` and
    ``TRUSTED_HOSTS``. ``login_required``
    (default: whenever there is a way to know the user) answers 401 to requests without one.
    ``allowed_origins`` lists other sites whose pages may call the endpoint from a browser.
    ``oauth=True`` lets MCP clients sign in with the site's own login (see the module's docs);
    ``login_url`` is where a visitor signs in when the site does not use Flask-Login's
    ``login_view`` (``?next=`` brings them back), ``load_user`` turns a user id back into a user
    when the site does not use Flask-Login's ``user_loader``. ``api_tokens`` lets users' API tokens
    (``flask mcp token``) in, kept by ``token_store`` (default: a SQLite file in the instance
    folder, see ``minimcp.flask.tokens``). ``http_options`` configure the endpoint (an
    ``HTTPOptions``, or its fields by name: ``json_response``, ``session_idle_timeout``, ...); every
    other keyword configures the server, as for ``MCPServer``.
    """

    def __init__(self, app: Flask | None = None, name: str | None = None, *, url_prefix: str = "/mcp",
                 user: Callable[[], Any] | None = None, login_required: bool | None = None,
                 allowed_hosts: Sequence[str] = (), allowed_origins: Sequence[str] = (), oauth: bool = False,
                 login_url: str | None = None, load_user: Callable[[str], Any] | None = None,
                 oauth_store: GrantStore | None = None,
                 api_tokens: bool = True, token_store: TokenStore | None = None,
                 http_options: HTTPOptions | Mapping[str, Any] | None = None, **options: Any) -> None:
        if isinstance(app, str):
            raise TypeError(f"MCP's first argument is the Flask app; name the server with MCP(app, name={app!r})")
        super().__init__(name, **options)
        self._backend_given = options.get("backend") is not None
        self.url_prefix = url_prefix
        self.login_required = login_required
        self.allowed_hosts = list(allowed_hosts)
        self.allowed_origins = list(allowed_origins)
        self._user_rule = user
        self.oauth = oauth
        self.login_url = login_url
        self._user_loader = load_user
        self._oauth_store = oauth_store
        self.api_tokens = api_tokens
        self._token_store = token_store
        self._stdio_user: str | None = None  # the user id ``flask mcp stdio --user`` runs as
        self._http_options = http_options
        self._endpoint = self.endpoint(http_options)
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask, url_prefix: str | None = None) -> None:
        """Serve the endpoint at ``url_prefix`` of ``app`` and add the ``flask mcp`` commands; the
        shared state goes to ``app.config["MINIMCP_BACKEND"]`` (a Redis URL) unless ``backend=`` was given."""
        prefix = "/" + (url_prefix or self.url_prefix).strip("/")
        if app.config.get("MINIMCP_BACKEND") is not None and not self._backend_given:
            self.use_backend(app.config["MINIMCP_BACKEND"])
            self._endpoint = self.endpoint(self._http_options)  # its sessions then live in the backend
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
        if g.get(_SIGNED_IN) is not None:
            return g.get(_SIGNED_IN)
        if self._stdio_user is not None:  # a stdio server: no request ever says who else is calling
            return self._load(self._stdio_user)
        if not has_request_context():
            # No request, so nobody: ``user=`` reads what the request's hooks put in ``g``, which
            # never ran here (``flask mcp stdio`` without ``--user``).
            return None
        if self._user_rule is not None:
            return self._user_rule()
        if has_request_context() and hasattr(current_app, "login_manager"):
            from flask_login import current_user

            user = current_user._get_current_object()
            return user if user is not None and user.is_authenticated else None
        return None

    @property
    def has_users(self) -> bool:
        """Whether this site tells minimcp who its users are without Flask-Login (``user=``, ``load_user=``)."""
        return self._user_rule is not None or self._user_loader is not None

    def signed_in_by_site(self) -> bool:
        """Whether the caller came in through the site's own login (its session cookie), not as a
        user minimcp signed in itself (a token's, ``--user``'s)."""
        return has_request_context() and g.get(_SIGNED_IN) is None

    def login_pages(self) -> set[str]:
        """The paths where this site sends a visitor to sign in: ``login_url``, Flask-Login's login
        views, and a route whose endpoint is named ``login`` (``auth.login``)."""
        manager = getattr(current_app, "login_manager", None)
        views = {getattr(manager, "login_view", None), *getattr(manager, "blueprint_login_views", {}).values()}
        views |= {rule.endpoint for rule in current_app.url_map.iter_rules()
                  if rule.endpoint.rpartition(".")[2] == "login" and not rule.arguments}
        pages = {url_for(view) for view in views if view}
        return pages | ({urlsplit(self.login_url).path} if self.login_url else set())

    def _needs_login(self) -> bool:
        if self.login_required is not None:
            return self.login_required
        return self._user_rule is not None or hasattr(current_app, "login_manager")

    # --- the endpoint --------------------------------------------------------------------------
    def _view(self) -> Response:
        refused = rebinding_refusal(request.environ, self._own_hosts(), self.allowed_origins,
                                    "MCP(allowed_hosts=[...]), or SERVER_NAME or TRUSTED_HOSTS in app.config")
        if refused is not None:
            return _response(refused)
        try:
            principal = self.principal_of(self.host_user())
        except UnidentifiedUser as problem:
            return _response(misconfigured(problem))
        if principal is None and self._needs_login():
            return _response(self._unauthorized())
        if (request.content_length or 0) > self._endpoint.max_request_body_size:
            return _response(too_large())
        native = request._get_current_object()  # type: ignore[attr-defined]
        return _response(self._endpoint.handle(host_request(request.environ, request.get_data(cache=True),
                                                            principal, native)))

    def _own_hosts(self) -> list[str]:
        """The names this site answers to besides loopback: ``allowed_hosts``, ``SERVER_NAME``, and
        with ``TRUSTED_HOSTS`` the request's own, which Flask (3.1 on) refused already unless trusted."""
        config = current_app.config
        names = [*self.allowed_hosts, *([config["SERVER_NAME"]] if config.get("SERVER_NAME") else [])]
        return [*names, request.host] if config.get("TRUSTED_HOSTS") else names

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
        if self.principal_of(user) is None:
            return self._to_login()
        if request.method == "POST":
            expected = session.get(_CSRF_KEY, "")
            if not expected or not hmac.compare_digest(expected, request.form.get("csrf_token", "")):
                return _page("The form was not sent from this site's page. Reload it and answer again.")
            allowed = request.form.get("decision") == "allow"
            answer = redirect(server.decide(pending, self.principal_of(user) if allowed else None))
            answer.headers["Cache-Control"] = "no-store"
            return answer
        token = session.setdefault(_CSRF_KEY, secrets.token_urlsafe(32))
        page = render_template("minimcp/consent.html", pending=pending, user=user,
                               username=display_name(user, self.principal_of), sealed=sealed,
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
        if user is not None and getattr(user, "is_active", True):
            _sign_in(user)

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
        """Whether a token's user can be loaded: API tokens need the site's way from an id to a user,
        and the site's ``SECRET_KEY`` that binds its tokens to it (or a token store of its own)."""
        manager = getattr(current_app, "login_manager", None)
        loads = self._user_loader is not None or getattr(manager, "_user_callback", None) is not None
        return self.api_tokens and loads and (self._token_store is not None or bool(current_app.secret_key))

    # --- where the calls run -------------------------------------------------------------------
    def call_scope(self) -> contextlib.AbstractContextManager[Any]:
        """A context of the call's own, wherever it runs (a worker, or the thread of the request):
        a fresh ``g``, the application's ``before_request`` hooks run again in it, and its teardown
        functions when the call ends. Nothing opened for the request (a database connection in
        ``g``) is seen by a call on another thread, nor closed under the request by the call's
        teardown."""
        app = current_app._get_current_object() if has_app_context() else None  # type: ignore[attr-defined]
        if app is None:
            return contextlib.nullcontext()
        if has_request_context():
            environ = dict(request.environ)
            body = request.get_data(cache=True)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            return _call_context(app, lambda: app.request_context(environ))
        user_id, load = self._stdio_user, self._load
        return _call_context(app, lambda: app.test_request_context(self.url_prefix),
                             None if user_id is None else lambda: _sign_in(load(user_id)))

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
        add_commands(group, self)  # inspect, call, install: minimcp's verbs for this app
        return group


@contextlib.contextmanager
def _call_context(app: Flask, request_context: Callable[[], Any],
                  sign_in: Callable[[], None] | None = None) -> Iterator[None]:
    """On the thread that runs a call: an app context of its own and ``request_context`` (the
    request that carried the call, or for ``flask mcp stdio`` a stand-in for the endpoint's URL,
    where ``sign_in`` signs the ``--user`` in), then the application's ``before_request`` hooks,
    as for the request itself: what they put in ``g`` (a user row, a database connection) is made
    on this thread, and the teardown functions close it here when the call ends. A hook that
    answers instead (a redirect, a refusal) fails the call: its tool must not run."""
    with app.app_context(), request_context():
        if sign_in is not None:
            sign_in()
        answered = app.preprocess_request()
        if answered is not None:
            raise RuntimeError(f"a before_request hook of {app.name} answered the call's request instead of letting "
                               f"it through ({app.make_response(answered).status})")
        yield


def _sign_in(user: Any) -> None:
    """Make ``user`` the current context's caller, for minimcp and for Flask-Login: not through
    ``login_user``, which writes a session cookie that nobody receives here (and needs a
    ``SECRET_KEY`` the site may not have)."""
    setattr(g, _SIGNED_IN, user)
    if hasattr(current_app, "login_manager"):
        setattr(g, _FLASK_LOGIN_USER, user)


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
