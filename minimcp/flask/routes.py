"""Existing Flask routes as MCP tools: the call is a real request through the application.

::

    from minimcp.flask.routes import publish_route

    publish_route(app, "show_book")                        # GET /books/<int:book_id> -> show_book(book_id)
    publish_route(app, add_book, arguments=NewBook)        # POST /books with NewBook's fields as JSON
    publish_route(app, "catalogue", arguments=Search, allowed=lambda user: user.is_admin)

A tool's arguments are the route's URL variables (typed by their converters, or by the view's
annotations) and the fields of an explicit pydantic model, sent as the query string (``GET``,
``DELETE``) or as a JSON body. A call runs the request through the application itself
(``app.wsgi_app``): its ``before_request`` hooks, ``login_required``, error handlers and
``after_request`` all apply, as the MCP caller (Flask-Login's ``current_user`` is the caller, and
the caller's ``Authorization`` and ``Cookie`` headers are passed on). An answer of 400 or more is an
error result with the status and the start of the body. A view that reads ``request.form`` gets the
arguments as form data (``body=`` decides otherwise); published without ``arguments=``, its tool asks
for the fields the view's code names (``request.form["title"]`` required, ``.get("body")`` not). A redirect after a ``POST`` is how a form view
says it is done: a success, reported with where it went; a redirect to the login page is a refusal,
and so is the page shown again with a message the view flashed (``flash("Title is required.")``).
A URL variable stays within its route: the URL built from the arguments must lead back to the same
route with the same values, so ``diary/export`` for ``<name>`` never reaches ``/notes/diary/export``.
In an application with Flask-Login a route's tool is for signed-in users unless ``allowed=`` says
otherwise, so an anonymous caller (``MCP(app, login_required=False)``) never sees a tool whose
route would send it to the login page. Without Flask-Login the route's own login knows only the
site's session cookie: a site with users (``MCP(user=...)``) offers a route's tool only to callers
signed in with it, not to a token's. A rule speaks about users, so it is never asked about a
caller with none; ``allowed=ANYONE`` publishes a tool with no rule, for anonymous callers too.
"""

from __future__ import annotations

import dis
import inspect
import json
from dataclasses import dataclass
from typing import Any, Callable, Literal, Optional
from urllib.parse import urlsplit

from flask import Flask, current_app, g, has_request_context, message_flashed, request
from pydantic import BaseModel
from werkzeug.exceptions import HTTPException
from werkzeug.routing import RequestRedirect, Rule
from werkzeug.test import EnvironBuilder, run_wsgi_app

from minimcp.hosts.hosted import AccessRule
from minimcp.server.mcpserver import Context
from minimcp.server.app.exceptions import ToolError
from minimcp.server.app.generated import Argument, http_answer, tool_function
from minimcp.server.app.signature import type_hints

__all__ = ["ANYONE", "publish_route"]

#: The environ key that carries the MCP caller into the inner request (no client can set it: a
#: client's headers arrive as HTTP_* keys).
_CALLER = "minimcp.caller"
#: The environ key of the messages the inner request flashed (``flash()``), gathered by ``_heard_flash``.
_FLASHED = "minimcp.flashed"
_CONVERTED = {"IntegerConverter": int, "FloatConverter": float}
_QUERY = ("GET", "DELETE", "HEAD")
_PASSED_ON = ("Authorization", "Cookie")


def ANYONE(user: Any) -> bool:
    """``publish_route(..., allowed=ANYONE)``: no rule at all, so a caller with no user sees the
    tool too (a rule of your own is never asked about one)."""
    return True


def publish_route(app: Flask, view: str | Callable[..., Any], *, name: str | None = None,
                  method: str | None = None, arguments: type[BaseModel] | None = None,
                  description: str | None = None, allowed: AccessRule | None = None,
                  requirement: str | None = None, body: Literal["json", "form"] | None = None,
                  excerpt: int = 2000) -> str:
    """Publish the route of ``view`` (an endpoint name or the view function) on the application's
    MCP server (``MCP(app)``, initialised first) as a tool; its name (default: the endpoint's).
    ``method`` picks one of a route's methods; ``allowed`` limits who sees and calls the tool (on a
    site with a login, by default, signed-in users: ``allowed=ANYONE`` opens it to anyone).
    ``body`` is how a ``POST``/``PUT``/``PATCH`` sends the arguments: ``"form"`` (form data, for a
    view that reads ``request.form``) or ``"json"``; by default ``"form"`` when the view's code
    reads ``request.form``, else ``"json"``."""
    mcp = app.extensions.get("minimcp")
    if mcp is None:
        raise RuntimeError("publish_route needs the application's MCP server: call MCP(app) or mcp.init_app(app) first")
    rule = _rule(app, view)
    verb = _method(rule, method)
    fn = app.view_functions[rule.endpoint]
    tool_name = name or rule.endpoint.replace(".", "_")
    hints = type_hints(fn)
    listed = [Argument(variable, _variable_type(rule, variable, hints), ..., f"The URL's <{variable}>")
              for variable in sorted(rule.arguments)]
    if arguments is not None:
        listed += [Argument(field.alias or key, field.annotation if field.is_required() else Optional[field.annotation],
                            ... if field.is_required() else field.get_default(call_default_factory=True),
                            field.description) for key, field in arguments.model_fields.items()]
    variables = set(rule.arguments)
    reads = _reads(fn)
    as_form = reads.form if body is None else body == "form"
    if arguments is None and as_form and verb not in _QUERY:
        listed += [Argument(field, str if required else Optional[str], ... if required else None,
                            f"The form's {field!r} field")
                   for field, required in reads.fields.items() if field not in variables]

    def run(values: dict[str, Any], ctx: Context) -> str:
        path_values = {key: value for key, value in values.items() if key in variables}
        rest = {key: value for key, value in values.items() if key not in variables and value is not None}
        if arguments is not None:
            rest = arguments.model_validate(rest).model_dump(mode="json", by_alias=True, exclude_none=True)
        return _call(current_app._get_current_object(), rule, verb, path_values, rest, as_form,  # type: ignore[attr-defined]
                     ctx.user, excerpt, mcp.login_pages())

    doc = description or inspect.getdoc(fn) or ""
    words = f"{verb} {rule.rule}" + (f": {doc}" if doc else "")
    _adopt_callers(app, mcp)
    if allowed is ANYONE:
        allowed = None
    elif not hasattr(app, "login_manager") and mcp.has_users:
        # The route's login knows the site's session cookie only: a caller signed in by a token (or
        # ``--user``) would be sent to the login page, so the tool is not theirs.
        allowed, requirement = _with_site_login(mcp, allowed), (
            f"{requirement or 'a user'} signed in with this site's own login, whose session the route's "
            "login_required reads (an API token or access token does not reach it)")
    elif allowed is None and hasattr(app, "login_manager"):  # safe by default: the route may need a login
        allowed, requirement = mcp.principal_of, requirement or "a signed-in user"
    mcp.add_tool(tool_function(tool_name, listed, run, description=words), tool_name, allowed=allowed,
                 requirement=requirement)
    return tool_name


def _call(app: Flask, rule: Rule, method: str, path_values: dict[str, Any], rest: dict[str, Any], as_form: bool,
          user: Any, excerpt: int, login_pages: set[str]) -> str:
    """Run ``method`` on the route as ``user`` through the whole application; what it answered."""
    adapter = app.url_map.bind("localhost")
    path = adapter.build(rule.endpoint, path_values, method=method, append_unknown=False)
    base = request.url_root if has_request_context() else "http://localhost/"
    headers = [(key, request.headers[key]) for key in _PASSED_ON if has_request_context() and key in request.headers]
    query = method in _QUERY
    builder = EnvironBuilder(path=path, base_url=base, method=method, headers=headers,
                             query_string=rest if query else None, data=_form(rest) if as_form and not query else None,
                             json=rest if not (as_form or query) else None)
    environ = builder.get_environ()
    _stays_on(rule, adapter, environ["PATH_INFO"], method, path_values)
    environ[_CALLER] = user
    flashed: list[str] = environ.setdefault(_FLASHED, [])
    body, status, answer = run_wsgi_app(app.wsgi_app, environ, buffered=True)
    try:
        text = b"".join(body).decode("utf-8", "replace")
    finally:
        close = getattr(body, "close", None)
        if close is not None:
            close()
    code, _, reason = status.partition(" ")
    shown = f"{method} {path}"
    if 300 <= int(code) < 400:
        return _redirected(shown, method, f"{code} {reason}", answer.get("Location") or "", login_pages)
    if flashed and method not in _QUERY and int(code) < 300:
        # The form again, with what the view flashed: post/redirect/get's way of refusing a post.
        raise ToolError(f"{shown} was not done: the view showed its page again ({code} {reason}) saying "
                        + " ".join(flashed))
    if "json" in (answer.get("Content-Type") or "") and text and int(code) < 400:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return http_answer(shown, int(code), reason, text, excerpt)


def _stays_on(rule: Rule, adapter: Any, path: str, method: str, values: dict[str, Any]) -> None:
    """Refuse URL variables that would carry the call off its route: the path built from them must
    lead back to this rule with the same values. A string variable's ``/`` (``diary/export``) would
    otherwise reach another route, one not published or published to others only."""
    try:
        matched, found = adapter.match(path, method=method, return_rule=True)
    except (HTTPException, RequestRedirect):
        matched, found = None, None
    if matched is not rule or _as_text(found or {}) != _as_text(values):
        given = ", ".join(f"{name}={value!r}" for name, value in sorted(values.items()))
        raise ToolError(f"{given} would leave {method} {rule.rule}: a URL variable is one segment of its route "
                        "(no '/', unless the route declares <path:...>)")


def _as_text(values: dict[str, Any]) -> dict[str, str]:
    """Values as their URL text: a view may annotate ``<id>`` as ``int`` and get ``"5"`` back."""
    return {name: str(value) for name, value in values.items()}


def _redirected(shown: str, method: str, status: str, location: str, login_pages: set[str]) -> str:
    """A redirect's meaning: to the login page, a refusal; after a change (``POST``...), the view's
    way of saying it is done (post/redirect/get); after a ``GET``, an answer this call did not get."""
    if urlsplit(location).path in login_pages:
        raise ToolError(f"{shown} redirected to {location}, the site's login page: this route needs a user signed "
                        "in with the site's own login, and this call's caller is not one it knows")
    if method not in _QUERY:
        return f"{shown} succeeded ({status}); the site then sent the browser to {location}"
    raise ToolError(f"{shown} redirected to {location} ({status}): the route wants something this call lacks")


def _form(values: dict[str, Any]) -> dict[str, Any]:
    """Form fields are text: a list becomes a repeated field, any other value its JSON text (a
    number ``3``, ``true``), a string itself."""
    def field(value: Any) -> str:
        return value if isinstance(value, str) else json.dumps(value)

    return {key: [field(item) for item in value] if isinstance(value, list) else field(value)
            for key, value in values.items()}


@dataclass(frozen=True)
class _Reads:
    """What a view's own code reads of the request: whether it is a form view (``request.form`` or
    ``request.files``, and not ``request.json``), and the form fields it names, each required
    (``request.form["title"]``, a 400 when missing) or not (``request.form.get("title")``)."""

    form: bool
    fields: dict[str, bool]


def _reads(view: Callable[..., Any]) -> _Reads:
    """Read the view's own code (under its decorators), as a person would, for what it takes from the
    request: a form view published without ``arguments=`` then asks for the fields it reads."""
    code = getattr(inspect.unwrap(view), "__code__", None)
    if code is None:
        return _Reads(False, {})
    read: set[str] = set()
    fields: dict[str, bool] = {}
    window: list[dis.Instruction] = []
    for instruction in dis.get_instructions(code):
        window = [*window[-3:], instruction]
        names = [step.argval for step in window]
        if len(window) > 1 and names[-2] == "request" and instruction.opname in ("LOAD_ATTR", "LOAD_METHOD"):
            read.add(instruction.argval)
        if len(window) == 4 and names[0] == "request" and names[1] == "form":
            if window[2].opname == "LOAD_CONST" and isinstance(names[2], str) and _subscript(window[3]):
                fields[names[2]] = True
            elif names[2] == "get" and window[3].opname == "LOAD_CONST" and isinstance(names[3], str):
                fields.setdefault(names[3], False)
    return _Reads(bool(read & {"form", "files"}) and not read & {"json", "get_json"}, fields)


def _subscript(instruction: dis.Instruction) -> bool:
    """``x[...]``: its own instruction before Python 3.14, a ``BINARY_OP`` since."""
    return instruction.opname == "BINARY_SUBSCR" or (instruction.opname == "BINARY_OP" and instruction.argrepr == "[]")


def _with_site_login(mcp: Any, allowed: AccessRule | None) -> AccessRule:
    def rule(user: Any) -> bool:
        return mcp.signed_in_by_site() and (allowed is None or bool(allowed(user)))

    return rule


def _adopt_callers(app: Flask, mcp: Any) -> None:
    """Once per application: a first ``before_request`` hook that makes an inner request's MCP
    caller Flask-Login's user (loaded again in the inner request's own context)."""
    if app.extensions.get("minimcp.routes"):
        return
    app.extensions["minimcp.routes"] = True

    def adopt_caller() -> None:
        caller = mcp.principal_of(request.environ.get(_CALLER))
        if caller is None or not hasattr(current_app, "login_manager"):
            return
        user = mcp._load(caller)
        if user is not None:
            g._login_user = user

    app.before_request_funcs.setdefault(None, []).insert(0, adopt_caller)
    message_flashed.connect(_heard_flash, app)


def _heard_flash(app: Flask, message: str, category: str, **extra: Any) -> None:
    """Keep what a route's inner request flashes (``flash()`` runs in that request's context), for
    ``_call`` to tell a refused form from a done one."""
    flashed = request.environ.get(_FLASHED) if has_request_context() else None
    if flashed is not None:
        flashed.append(str(message))


def _rule(app: Flask, view: str | Callable[..., Any]) -> Rule:
    endpoints = [view] if isinstance(view, str) else [e for e, fn in app.view_functions.items() if fn is view]
    rules = [rule for rule in app.url_map.iter_rules() if rule.endpoint in endpoints]
    if not rules:
        raise ValueError(f"No route of {app.name} serves {view!r}; register the route before publishing it")
    if len(rules) > 1:
        raise ValueError(f"{view!r} is served at {[r.rule for r in rules]}; publish one endpoint name per route")
    return rules[0]


def _method(rule: Rule, method: str | None) -> str:
    methods = sorted((rule.methods or set()) - {"HEAD", "OPTIONS"})
    if method is None:
        if len(methods) != 1:
            raise ValueError(f"{rule.rule} answers {methods}: say which with publish_route(..., method=...)")
        return methods[0]
    if method.upper() not in methods:
        raise ValueError(f"{rule.rule} does not answer {method.upper()}; it answers {methods}")
    return method.upper()


def _variable_type(rule: Rule, variable: str, hints: dict[str, Any]) -> Any:
    if variable in hints:
        return hints[variable]
    converter = getattr(rule, "_converters", {}).get(variable)
    return _CONVERTED.get(type(converter).__name__, str)
