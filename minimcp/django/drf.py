"""Django REST framework views as MCP tools, and DRF authentication for the MCP endpoint.

::

    from minimcp.django.drf import publish

    publish(BookViewSet, name="books")                # books_list, books_retrieve, books_create, ...
    publish(BookViewSet, name="books", actions=["list", "retrieve", "blurb"])   # blurb: an @action
    publish(ReviewList, name="reviews")               # a generic view: reviews_get, reviews_post
    publish(ReviewList, name="reviews", model_permissions=False)   # the view's permission classes alone

A tool's input schema comes from the view's serializer (its writable fields for a body, the lookup
for a detail route, ``page``/``search``/``ordering`` where the view paginates, searches or orders).
A call goes through the view itself, as the MCP caller: its permission classes, throttles and
serializer validation run as for any request, and an answer of 400 or more comes back as an error
result carrying the view's own messages (``{"stars": ["Ensure this value is less than or equal to
5."]}``). The result is what the view answers, its serializer's output.

Who may use a tool: the model's permission for what it does (``view_`` for GET, ``add_`` for POST,
``change_`` for PUT and PATCH, ``delete_`` for DELETE, the model being the view's ``queryset``'s or
its serializer's), as the site's admin and ``ModelToolset`` ask, and on top of that whatever the
view's own permission classes ask. Views often ask less (``IsAuthenticatedOrReadOnly`` with an
owner check lets any owner delete); publishing an API to an assistant should not widen what a user
may do, so ``model_permissions=False`` is needed to let the view's classes alone decide. A user
refused either way does not see the tool, and a call is refused before the view runs.

``MINIMCP = {"DRF_AUTHENTICATION": True}`` lets the MCP endpoint accept what the project's
``DEFAULT_AUTHENTICATION_CLASSES`` accept (a list of class paths picks others), beside the
session and minimcp's API tokens.

Importing this module imports ``rest_framework``; nothing else in minimcp does.
"""

from __future__ import annotations

import datetime
import decimal
import json
import logging
from collections.abc import Sequence
from typing import Any, Literal, Optional

from django.http import HttpRequest
from rest_framework import serializers
from rest_framework.exceptions import APIException
from rest_framework.filters import OrderingFilter, SearchFilter
from rest_framework.mixins import DestroyModelMixin, RetrieveModelMixin, UpdateModelMixin
from rest_framework.renderers import JSONRenderer
from rest_framework.settings import api_settings
from rest_framework.views import APIView
from rest_framework.viewsets import ViewSetMixin

from minimcp.django.calls import call_request
from minimcp.hosts.hosted import principal_of
from minimcp.server.mcpserver import Context
from minimcp.server.app.generated import Argument, http_answer, tool_function
from minimcp.types import ToolAnnotations

logger = logging.getLogger("minimcp.django")

#: The methods of a ViewSet's standard actions, and whether they name one object.
_ACTIONS = {"list": ("get", False), "create": ("post", False), "retrieve": ("get", True),
            "update": ("put", True), "partial_update": ("patch", True), "destroy": ("delete", True)}
_BODY = ("post", "put", "patch")
#: The model permission each method needs, as the admin names them.
_MODEL_ACTIONS = {"get": "view", "post": "add", "put": "change", "patch": "change", "delete": "delete"}
_FIELD_TYPES: tuple[tuple[type[serializers.Field], Any], ...] = (
    (serializers.BooleanField, bool), (serializers.IntegerField, int), (serializers.FloatField, float),
    (serializers.DecimalField, decimal.Decimal), (serializers.DateTimeField, datetime.datetime),
    (serializers.DateField, datetime.date), (serializers.TimeField, datetime.time),
    (serializers.ListField, list), (serializers.DictField, dict), (serializers.JSONField, Any),
    (serializers.ManyRelatedField, list), (serializers.PrimaryKeyRelatedField, int), (serializers.Serializer, dict),
)


def publish(view: type[APIView], *, name: str | None = None, actions: Sequence[str] | None = None,
            methods: Sequence[str] | None = None, serializer: type[serializers.BaseSerializer] | None = None,
            model_permissions: bool = True, mcp: Any = None) -> list[str]:
    """Publish a ViewSet's ``actions`` (default: the standard ones it has; an ``@action`` by its
    name) or an APIView's ``methods`` (default: those it handles) as tools named
    ``{name}_{action or method}``, on ``mcp`` (default: the project's ``minimcp.django.mcp``); their
    names. ``serializer`` gives the input schema of a view that has no ``serializer_class``;
    ``model_permissions=False`` leaves who may call to the view's permission classes alone."""
    if not (isinstance(view, type) and issubclass(view, APIView)):
        raise TypeError(f"publish() takes a DRF APIView, generic view or ViewSet class, not {view!r}")
    if mcp is None:
        from minimcp.django import mcp as project_mcp

        mcp = project_mcp
    base = name or _default_name(view)
    routes = _viewset_routes(view, actions) if issubclass(view, ViewSetMixin) else _view_routes(view, methods)
    published = []
    for label, method, action, detail in routes:
        route = _Route(view, f"{base}_{label}", method, action, detail, serializer, model_permissions)
        mcp.tool(allowed=route.allows, requirement=route.requirement(), annotations=route.hints())(route.function())
        published.append(route.name)
    return published


def authenticate(request: HttpRequest, classes: Literal[True] | Sequence[str]) -> Any:
    """The user DRF's authentication ``classes`` (``True``: the project's defaults) find on
    ``request``, or ``None``; credentials they reject are ``None`` too (the endpoint answers 401)."""
    from django.utils.module_loading import import_string
    from rest_framework.request import Request

    chosen = api_settings.DEFAULT_AUTHENTICATION_CLASSES if classes is True else [import_string(c) for c in classes]
    wrapped = Request(request, authenticators=[cls() for cls in chosen])
    try:
        user = wrapped.user
    except APIException as refused:
        logger.info("DRF authentication refused a request to the MCP endpoint: %s", refused)
        return None
    return user if principal_of(user) is not None else None


def _text(response: Any) -> str:
    """The answer as a client reads it: text a view answers as it is (an ``@action`` with
    ``StaticHTMLRenderer`` or a plain-text renderer gives its page, not that page as a JSON string),
    data as JSON, an error's messages on one line."""
    if isinstance(response.data, str):
        return response.data
    answer = json.loads(JSONRenderer().render(response.data))
    return json.dumps(answer, indent=None if response.status_code >= 400 else 2, ensure_ascii=False)


class _Route:
    """One view method (or ViewSet action) as one tool."""

    def __init__(self, view: type[APIView], name: str, method: str, action: str | None, detail: bool,
                 serializer: type[serializers.BaseSerializer] | None, model_permissions: bool) -> None:
        self.view = view
        self.name = name
        self.method = method
        self.action = action
        self.detail = detail
        self.serializer = serializer or getattr(view, "serializer_class", None)
        self.lookup: str = getattr(view, "lookup_url_kwarg", "") or getattr(view, "lookup_field", "pk")
        self.permission = self._model_permission() if model_permissions else None

    # --- the tool ---------------------------------------------------------------------------------
    def function(self) -> Any:
        arguments = self._arguments()
        body_names = {a.name for a in arguments} - {self.lookup, "page", "search", "ordering"}

        def body(values: dict[str, Any], ctx: Context) -> Any:
            given = {key: value for key, value in values.items() if value is not None}
            kwargs = {self.lookup: given.pop(self.lookup)} if self.detail else {}
            data = {key: given[key] for key in body_names if key in given}
            query: dict[str, Any] = {key: given[key] for key in ("page", "search", "ordering") if key in given}
            response = self._dispatch(ctx.user, kwargs, query, data if self.method in _BODY else None)
            shown = f"{self.view.__name__} ({self.method.upper()})"
            if response.data is None:
                return http_answer(shown, response.status_code, response.status_text, "")
            return http_answer(shown, response.status_code, response.status_text, _text(response))

        return tool_function(self.name, arguments, body, description=self._description())

    def _dispatch(self, user: Any, kwargs: dict[str, Any], query: dict[str, Any], data: Any) -> Any:
        request = self._request(user, query, data)
        handler = self.view.as_view({self.method: self.action}) if self.action else self.view.as_view()
        return handler(request, **kwargs)

    def _request(self, user: Any, query: dict[str, Any] | None = None, data: Any = None) -> HttpRequest:
        request = call_request(user, self.name, self.method, "/", query, data)
        if principal_of(user) is not None:
            request._force_auth_user = user  # the MCP endpoint authenticated the caller; DRF's forced authentication
        return request

    # --- who sees it --------------------------------------------------------------------------------
    def allows(self, user: Any) -> bool:
        """Whether ``user`` has the model permission (unless opted out) and the view's permission
        classes let it in (``has_permission``; object-level checks and throttles run at the call)."""
        if self.permission is not None and not user.has_perm(self.permission):
            return False
        view = self.view(**({"action_map": {self.method: self.action}} if self.action else {}))
        if self.action:
            view.action = self.action
        view.args, view.kwargs, view.format_kwarg = (), {}, None
        view.headers = {}
        view.request = view.initialize_request(self._request(user))
        try:
            return all(permission.has_permission(view.request, view) for permission in view.get_permissions())
        except Exception:
            logger.warning("the permission classes of %s failed; hiding tool %s", self.view.__name__, self.name,
                           exc_info=True)
            return False

    def requirement(self) -> str:
        classes = ", ".join(cls.__name__ for cls in self.view.permission_classes) or "none"
        own = f"what {self.view.__name__}'s permission classes allow ({classes})"
        return own if self.permission is None else f"the permission {self.permission} and {own}"

    def _model_permission(self) -> str | None:
        """The model permission this route's method needs (``None``: the view names no model)."""
        queryset = getattr(self.view, "queryset", None)
        model = queryset.model if queryset is not None else getattr(getattr(self.serializer, "Meta", None), "model", None)
        if model is None:
            return None
        return f"{model._meta.app_label}.{_MODEL_ACTIONS[self.method]}_{model._meta.model_name}"

    def hints(self) -> ToolAnnotations:
        return ToolAnnotations(read_only_hint=self.method == "get", destructive_hint=self.method in ("put", "patch", "delete"))

    # --- the schema ---------------------------------------------------------------------------------
    def _arguments(self) -> list[Argument]:
        arguments: list[Argument] = []
        if self.detail:
            arguments.append(Argument(self.lookup, str | int, ..., f"The {self.lookup} of the object"))
        if self.method in _BODY:
            if self.serializer is None:
                raise TypeError(f"{self.view.__name__} has no serializer_class: publish(..., serializer=...) gives "
                                "the input schema of its body")
            partial = self.method == "patch"
            for field_name, field in self.serializer().fields.items():
                if not field.read_only:
                    arguments.append(_argument(field_name, field, optional=partial or not field.required))
        elif self.method == "get" and not self.detail:
            arguments += self._query_arguments()
        return arguments

    def _query_arguments(self) -> list[Argument]:
        arguments = []
        if getattr(self.view, "pagination_class", None) is not None:
            arguments.append(Argument("page", Optional[int], None, "The page to return, from 1"))
        backends = getattr(self.view, "filter_backends", ())
        if any(issubclass(b, SearchFilter) for b in backends) and getattr(self.view, "search_fields", None):
            arguments.append(Argument("search", Optional[str], None,
                                      f"Text to look for in {', '.join(self.view.search_fields)}"))
        if any(issubclass(b, OrderingFilter) for b in backends) and getattr(self.view, "ordering_fields", None):
            choices = [key for f in self.view.ordering_fields for key in (f, f"-{f}")]
            arguments.append(Argument("ordering", Optional[Literal[tuple(choices)]], None,
                                      "Sort by this field (a leading '-' sorts descending)"))
        return arguments

    def _description(self) -> str:
        doc = " ".join((self.view.__doc__ or "").split())
        what = f"{self.action} ({self.method.upper()})" if self.action else self.method.upper()
        return f"{self.view.__name__}: {what}." + (f" {doc}" if doc else "")


def _argument(name: str, field: serializers.Field, optional: bool) -> Argument:
    annotation: Any = str
    for kind, python in _FIELD_TYPES:
        if isinstance(field, kind):
            annotation = python
            break
    if isinstance(field, serializers.ChoiceField) and field.choices:
        annotation = Literal[tuple(field.choices)]
    if optional or field.allow_null:
        annotation = Optional[annotation]
    words = [str(text) for text in (field.label, field.help_text) if text]
    return Argument(name, annotation, None if optional else ..., "; ".join(words) or None)


def _viewset_routes(view: type[APIView], actions: Sequence[str] | None) -> list[tuple[str, str, str, bool]]:
    """(label, method, action, detail) of each published action of a ViewSet."""
    extra = {action.__name__: action for action in view.get_extra_actions()}
    wanted = list(actions) if actions is not None else [a for a in _ACTIONS if hasattr(view, a)]
    routes = []
    for action in wanted:
        if action in _ACTIONS and hasattr(view, action):
            method, detail = _ACTIONS[action]
        elif action in extra:
            method, detail = next(iter(extra[action].mapping)), bool(extra[action].detail)
        else:
            raise ValueError(f"{view.__name__} has no action {action!r}; it has "
                             f"{[a for a in _ACTIONS if hasattr(view, a)] + list(extra)}")
        routes.append((action, method, action, detail))
    return routes


def _view_routes(view: type[APIView], methods: Sequence[str] | None) -> list[tuple[str, str, None, bool]]:
    """(label, method, None, detail) of each published method of an APIView or generic view."""
    handled = [m for m in ("get", "post", "put", "patch", "delete") if hasattr(view, m)]
    wanted = [m.lower() for m in methods] if methods is not None else handled
    missing = [m for m in wanted if m not in handled]
    if missing:
        raise ValueError(f"{view.__name__} does not handle {missing}; it handles {handled}")
    detail = issubclass(view, (RetrieveModelMixin, UpdateModelMixin, DestroyModelMixin))
    return [(method, method, None, detail) for method in wanted]


def _default_name(view: type[APIView]) -> str:
    words = view.__name__.removesuffix("ViewSet").removesuffix("View")
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in words).lstrip("_")
