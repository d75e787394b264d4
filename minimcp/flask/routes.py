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
the caller's ``Authorization`` and ``Cookie`` headers are passed on). An answer of 400 or more, or a
redirect (to a login page, say), is an error result with the status and the start of the body.
In an application with Flask-Login a route's tool is for signed-in users unless ``allowed=`` says
otherwise, so an anonymous caller (``MCP(app, login_required=False)``) never sees a tool whose
route would send it to the login page. A rule speaks about users, so it is never asked about a
caller with none; ``allowed=ANYONE`` publishes a tool with no rule, for anonymous callers too.
"""

from __future__ import annotations

import inspect
import json
from typing import Any, Callable, Optional

from flask import Flask, current_app, g, has_request_context, request
from pydantic import BaseModel
from werkzeug.routing import Rule
from werkzeug.test import EnvironBuilder, run_wsgi_app

from minimcp.hosts.hosted import AccessRule, principal_of
from minimcp.server.mcpserver import Context
from minimcp.server.mcpserver.exceptions import ToolError
from minimcp.server.mcpserver.generated import Argument, http_answer, tool_function
from minimcp.server.mcpserver.signature import type_hints

__all__ = ["ANYONE", "publish_route"]

#: The environ key that carries the MCP caller into the inner request (no client can set it: a
#: client's headers arrive as HTTP_* keys).
_CALLER = "minimcp.caller"
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
                  requirement: str | None = None, excerpt: int = 2000) -> str:
    """Publish the route of ``view`` (an endpoint name or the view function) on the application's
    MCP server (``MCP(app)``, initialised first) as a tool; its name (default: the endpoint's).
    ``method`` picks one of a route's methods; ``allowed`` limits who sees and calls the tool (with
    Flask-Login, by default, signed-in users: ``allowed=ANYONE`` opens it to anyone)."""
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

    def body(values: dict[str, Any], ctx: Context) -> str:
        path_values = {key: value for key, value in values.items() if key in variables}
        rest = {key: value for key, value in values.items() if key not in variables and value is not None}
        if arguments is not None:
            rest = arguments.model_validate(rest).model_dump(mode="json", by_alias=True, exclude_none=True)
        return _call(current_app._get_current_object(), rule, verb, path_values, rest, ctx.user,  # type: ignore[attr-defined]
                     excerpt)

    doc = description or inspect.getdoc(fn) or ""
    words = f"{verb} {rule.rule}" + (f": {doc}" if doc else "")
    _adopt_callers(app, mcp)
    if allowed is ANYONE:
        allowed = None
    elif allowed is None and hasattr(app, "login_manager"):  # safe by default: the route may need a login
        allowed, requirement = _signed_in, requirement or "a signed-in user"
    mcp.add_tool(tool_function(tool_name, listed, body, description=words), tool_name, allowed=allowed,
                 requirement=requirement)
    return tool_name


def _call(app: Flask, rule: Rule, method: str, path_values: dict[str, Any], rest: dict[str, Any], user: Any,
          excerpt: int) -> str:
    """Run ``method`` on the route as ``user`` through the whole application; what it answered."""
    path = app.url_map.bind("localhost").build(rule.endpoint, path_values, method=method, append_unknown=False)
    base = request.url_root if has_request_context() else "http://localhost/"
    headers = [(key, request.headers[key]) for key in _PASSED_ON if has_request_context() and key in request.headers]
    builder = EnvironBuilder(path=path, base_url=base, method=method, headers=headers,
                             query_string=rest if method in _QUERY else None,
                             json=rest if method not in _QUERY else None)
    environ = builder.get_environ()
    environ[_CALLER] = user
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
        raise ToolError(f"{shown} redirected to {answer.get('Location')} ({code} {reason}): the route wants "
                        "something this call lacks, such as a signed-in user")
    if "json" in (answer.get("Content-Type") or "") and text and int(code) < 400:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    return http_answer(shown, int(code), reason, text, excerpt)


def _signed_in(user: Any) -> bool:
    return principal_of(user) is not None


def _adopt_callers(app: Flask, mcp: Any) -> None:
    """Once per application: a first ``before_request`` hook that makes an inner request's MCP
    caller Flask-Login's user (loaded again in the inner request's own context)."""
    if app.extensions.get("minimcp.routes"):
        return
    app.extensions["minimcp.routes"] = True

    def adopt_caller() -> None:
        caller = principal_of(request.environ.get(_CALLER))
        if caller is None or not hasattr(current_app, "login_manager"):
            return
        user = mcp._load(caller)
        if user is not None:
            g._login_user = user

    app.before_request_funcs.setdefault(None, []).insert(0, adopt_caller)


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
