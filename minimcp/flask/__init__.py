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

``flask mcp stdio`` serves the same tools over stdio. There is no HTTP request there: each call
runs in an application context and a stand-in request context for the endpoint's URL, signed in
(Flask-Login) as the user given with ``--user ID``, anonymous otherwise.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import Iterator, Sequence
from typing import Any, Callable

import click
from flask import Flask, Response, current_app, g, has_app_context, has_request_context, request
from flask.cli import AppGroup

from minimcp.hosting import (
    Forwarded,
    HostedServer,
    forbidden_origin,
    forward,
    origin_allowed,
    principal_of,
    too_large,
    unauthorized,
)

__all__ = ["MCP"]

#: Flask-Login keeps the request's user here; the worker loads its own, bound to its own db.session.
_FLASK_LOGIN_USER = "_login_user"


class MCP(HostedServer):
    """An MCP server that is part of a Flask application.

    ``user`` returns the caller (a user object, or ``None`` for nobody); without it the caller is
    Flask-Login's ``current_user`` when the application uses Flask-Login. ``login_required``
    (default: whenever there is a way to know the user) answers 401 to requests without one.
    ``allowed_origins`` lists other sites whose pages may call the endpoint from a browser.
    ``http_options`` configure the endpoint (``json_response``, ``session_idle_timeout``, ...); every
    other keyword configures the server, as for ``MCPServer``.
    """

    def __init__(self, app: Flask | None = None, name: str | None = None, *, url_prefix: str = "/mcp",
                 user: Callable[[], Any] | None = None, login_required: bool | None = None,
                 allowed_origins: Sequence[str] = (), http_options: dict[str, Any] | None = None,
                 **options: Any) -> None:
        if isinstance(app, str):
            raise TypeError(f"MCP's first argument is the Flask app; name the server with MCP(app, name={app!r})")
        super().__init__(name, **options)
        self.url_prefix = url_prefix
        self.login_required = login_required
        self.allowed_origins = list(allowed_origins)
        self._user_rule = user
        self._stdio_user: str | None = None  # the user id ``flask mcp stdio --user`` runs as
        self._endpoint = self.endpoint(**(http_options or {}))
        if app is not None:
            self.init_app(app)

    def init_app(self, app: Flask, url_prefix: str | None = None) -> None:
        """Serve the endpoint at ``url_prefix`` of ``app`` and add the ``flask mcp`` commands."""
        prefix = "/" + (url_prefix or self.url_prefix).strip("/")
        app.extensions["minimcp"] = self
        app.add_url_rule(prefix, endpoint="minimcp", view_func=self._view, methods=["GET", "POST", "DELETE"],
                         strict_slashes=False)
        csrf = app.extensions.get("csrf")  # Flask-WTF: an MCP client posts JSON, not the site's forms
        if csrf is not None:
            csrf.exempt(self._view)
        app.cli.add_command(self._commands())

    # --- who is calling ------------------------------------------------------------------------
    def host_user(self) -> Any:
        if not has_app_context():
            return None
        if self._stdio_user is not None and not has_request_context():
            return _load_user(self._stdio_user)
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
            return _response(unauthorized(current_app.name))
        if (request.content_length or 0) > self._endpoint.max_request_body_size:
            return _response(too_large())
        return _response(forward(self._endpoint, request.environ, request.get_data(cache=True), principal))

    # --- where the calls run -------------------------------------------------------------------
    def call_scope(self) -> contextlib.AbstractContextManager[Any]:
        if has_request_context():
            environ = dict(request.environ)
            body = request.get_data(cache=True)
            environ["wsgi.input"] = io.BytesIO(body)
            environ["CONTENT_LENGTH"] = str(len(body))
            values = {k: v for k, v in vars(g).items() if k != _FLASK_LOGIN_USER}
            return _request_scope(current_app._get_current_object(), environ, values)  # type: ignore[attr-defined]
        if has_app_context():
            return _command_scope(current_app._get_current_object(), self.url_prefix,  # type: ignore[attr-defined]
                                  self._stdio_user)
        return contextlib.nullcontext()

    # --- the command line ----------------------------------------------------------------------
    def _commands(self) -> click.Group:
        group = AppGroup("mcp", help="Serve this application's MCP tools.")

        @group.command("stdio")
        @click.option("--user", "user_id", default=None, help="Run every call as this user id (Flask-Login).")
        def stdio(user_id: str | None) -> None:
            """Serve the tools over stdin/stdout (for an MCP client that starts this command)."""
            if user_id is not None and _load_user(user_id) is None:
                raise click.BadParameter(f"no user with id {user_id!r}", param_hint="--user")
            self._stdio_user = user_id
            self.run("stdio")

        return group


@contextlib.contextmanager
def _request_scope(app: Flask, environ: dict[str, Any], values: dict[str, Any]) -> Iterator[None]:
    """On the worker: an app context of the call's own (its ``g`` seeded with ``values``) and a
    request context over ``environ``; leaving them runs the teardown functions."""
    with app.app_context():
        vars(g).update(values)
        with app.request_context(environ):
            yield


@contextlib.contextmanager
def _command_scope(app: Flask, path: str, user_id: str | None) -> Iterator[None]:
    """On the worker, for a call with no HTTP request (``flask mcp stdio``): an app context and a
    stand-in request for ``path``, signed in as ``user_id`` when there is one."""
    with app.app_context(), app.test_request_context(path):
        if user_id is not None:
            from flask_login import login_user

            login_user(_load_user(user_id))
        yield


def _load_user(user_id: str) -> Any:
    """The user Flask-Login's ``user_loader`` gives for ``user_id``."""
    manager = getattr(current_app, "login_manager", None)
    loader = getattr(manager, "_user_callback", None)
    if loader is None:
        raise click.UsageError("--user needs Flask-Login with a user_loader on this application")
    return loader(user_id)


def _response(answer: Forwarded) -> Response:
    return Response(answer.body, status=answer.status, headers=answer.headers, direct_passthrough=True)
