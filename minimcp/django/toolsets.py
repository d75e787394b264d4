"""Django models as MCP tools: a declarative toolset, as an admin class declares a model's admin.

::

    from minimcp.django.toolsets import ModelToolset

    class BookTools(ModelToolset):
        model = Book
        fields = ["id", "title", "author", "year"]
        filters = ["author", "year"]          # exact-match arguments of list_books
        search = ["title"]                    # list_books(search="...") looks in these (icontains)
        ordering = ["title", "year"]          # list_books(order_by="-year")
        page_size = 20                        # the default and the most a page holds
        create = update = delete = True       # opt in to the writing tools
        write_fields = ["title", "author", "year"]  # what they may write: named, as a ModelForm's fields
        confirm = True                        # delete_book asks the user first (ctx.elicit)

        def get_queryset(self, request):      # what this caller may reach, per request
            return super().get_queryset(request).filter(owner=request.user)

        def before_save(self, request, instance, created):  # what the caller does not send
            instance.owner = request.user

    BookTools.register()                      # on the project's server (minimcp.django.mcp)

It makes ``list_books`` and ``get_book`` and, opted in, ``create_book``, ``update_book`` and
``delete_book``. Input schemas come from the model's fields, descriptions from ``verbose_name`` and
``help_text``. Each tool needs the caller's model permission (``view_``, ``add_``, ``change_``,
``delete_``): a user without it does not see the tool and a call is refused. Objects are looked up
through ``get_queryset(request)`` only, so a user never reaches a row it leaves out.

Writing is a ModelForm's rules: the writing tools need ``write_fields`` (``"__all__"``: every shown
editable field), so a field added to the model later (``approved``) is never writable by surprise;
validation covers what the caller writes (``full_clean`` excluding the other fields, which ``save()``
or ``before_save`` fill, and uniqueness among the written ones) and comes back as an error result
naming each field's problem. A foreign key takes only what the caller may reach: the rows of the
related model's toolset on the same server (its ``get_queryset``), else its default manager, within
the field's ``limit_choices_to`` (``related_queryset`` decides); a row that is missing and one that
is not the caller's get the same answer.
"""

from __future__ import annotations

import datetime
import decimal
import weakref
from collections.abc import Sequence
from typing import Any, ClassVar, Literal, Optional

from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import models, transaction
from django.db.models import Q, QuerySet
from django.http import HttpRequest
from django.utils.text import slugify
from pydantic import BaseModel, Field

from minimcp.django.calls import call_request
from minimcp.server.mcpserver import Context
from minimcp.server.app.exceptions import ToolError
from minimcp.server.app.generated import Argument, tool_function
from minimcp.types import ToolAnnotations

_TYPES: tuple[tuple[type[models.Field], Any], ...] = (  # most specific first: BooleanField before IntegerField
    (models.BooleanField, bool), (models.ForeignKey, int), (models.AutoField, int), (models.BigAutoField, int),
    (models.IntegerField, int), (models.FloatField, float), (models.DecimalField, decimal.Decimal),
    (models.DateTimeField, datetime.datetime), (models.DateField, datetime.date), (models.TimeField, datetime.time),
    (models.DurationField, datetime.timedelta), (models.UUIDField, str), (models.JSONField, Any),
    (models.CharField, str), (models.TextField, str),
)

_VERBS = ("list", "get", "create", "update", "delete")

#: The toolsets registered on each server, by model: a foreign key written through one toolset is
#: limited to the rows the related model's toolset lets the caller reach. Written while the
#: project's ``mcp.py`` modules are imported, before serving; only read after.
_REGISTERED: weakref.WeakKeyDictionary[Any, dict[type[models.Model], list[ModelToolset]]] = weakref.WeakKeyDictionary()


class Confirm(BaseModel):
    """The form a confirming delete shows."""

    confirm: bool = Field(description="Delete it for good?")


class ModelToolset:
    """Tools over one model; subclass it, set the class attributes, and ``register()`` it."""

    model: ClassVar[type[models.Model]]
    #: The fields the tools show (``"__all__"``: every concrete field).
    fields: ClassVar[Sequence[str] | str] = "__all__"
    #: Fields ``list_...`` filters on by exact value, each an optional argument.
    filters: ClassVar[Sequence[str]] = ()
    #: Fields ``list_...(search=...)`` looks in, case-insensitively (across relations: ``author__name``).
    search: ClassVar[Sequence[str]] = ()
    #: Fields ``list_...(order_by=...)`` may sort by (``-name`` descending).
    ordering: ClassVar[Sequence[str]] = ()
    #: The page size ``list_...`` uses by default and the most it hands out at once.
    page_size: ClassVar[int] = 20
    #: Opt-in writing tools.
    create: ClassVar[bool] = False
    update: ClassVar[bool] = False
    delete: ClassVar[bool] = False
    #: The fields ``create_...`` and ``update_...`` take: required with either of them, as a
    #: ModelForm's ``fields`` (``"__all__"``: the shown fields that are editable).
    write_fields: ClassVar[Sequence[str] | str | None] = None
    #: Ask the user (``ctx.elicit``) before deleting.
    confirm: ClassVar[bool] = False
    #: The word in the tool names (default: the model's ``verbose_name``, and its plural for ``list_``).
    name: ClassVar[str | None] = None

    def __init__(self) -> None:
        self._server: Any = None  # the server ``register`` put the tools on

    # --- what a subclass overrides ---------------------------------------------------------------
    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        """The rows ``request.user`` may reach; every tool looks objects up here."""
        return self.model._default_manager.all()

    def before_save(self, request: HttpRequest, instance: models.Model, created: bool) -> None:
        """Fill what the caller does not send (``instance.owner = request.user``) before validation;
        what it sets is trusted, as a view's own assignments after a ModelForm: not validated."""

    def related_queryset(self, request: HttpRequest, field: models.ForeignKey[Any, Any]) -> QuerySet[Any]:
        """The rows a written foreign key ``field`` may point to for ``request.user``: those the
        related model's toolset on this server reaches (any of them, if several), else the
        related model's default manager; within the field's ``limit_choices_to`` either way."""
        related = field.related_model
        toolsets = _REGISTERED.get(self._server, {}).get(related, []) if self._server is not None else []
        rows = related._default_manager.all() if not toolsets else toolsets[0].get_queryset(request)
        for toolset in toolsets[1:]:
            rows = rows | toolset.get_queryset(request)
        return rows.complex_filter(field.get_limit_choices_to())

    def to_dict(self, instance: models.Model) -> dict[str, Any]:
        """What a tool answers for one object: the shown fields (a foreign key as its primary key)."""
        return {field.name: getattr(instance, field.attname) for field in self._shown()}

    # --- registering -----------------------------------------------------------------------------
    @classmethod
    def register(cls, mcp: Any = None) -> list[str]:
        """Add this toolset's tools to ``mcp`` (default: the project's ``minimcp.django.mcp``); their names."""
        if mcp is None:
            from minimcp.django import mcp as project_mcp

            mcp = project_mcp
        toolset = cls()
        toolset._check()
        toolset._server = mcp
        _REGISTERED.setdefault(mcp, {}).setdefault(cls.model, []).append(toolset)
        names = []
        for verb in _VERBS:
            if verb in ("list", "get") or getattr(cls, verb):
                fn, permission, hints = getattr(toolset, f"_{verb}_tool")()
                mcp.tool(permission_required=permission, annotations=hints)(fn)
                names.append(fn.__name__)
        return names

    # --- the tools -------------------------------------------------------------------------------
    def _list_tool(self) -> tuple[Any, str, ToolAnnotations]:
        arguments = [self._argument(name, optional=True, purpose="Only those whose {} is this value")
                     for name in self.filters]
        if self.search:
            arguments.append(Argument("search", Optional[str], None,
                                      f"Text to look for in {', '.join(self._label(f) for f in self.search)}"))
        if self.ordering:
            choices = [key for name in self.ordering for key in (name, f"-{name}")]
            arguments.append(Argument("order_by", Optional[Literal[tuple(choices)]], None,
                                      "Sort by this field (a leading '-' sorts descending)"))
        arguments.append(Argument("page", int, 1, "The page to return, from 1"))
        arguments.append(Argument("page_size", int, self.page_size, f"How many per page (at most {self.page_size})"))

        def body(values: dict[str, Any], ctx: Context) -> dict[str, Any]:
            rows = self.get_queryset(self._request(ctx, "list"))
            rows = rows.filter(**{name: values[name] for name in self.filters if values.get(name) is not None})
            if values.get("search"):
                words = Q()
                for name in self.search:
                    words |= Q(**{f"{name}__icontains": values["search"]})
                rows = rows.filter(words)
            if values.get("order_by"):
                rows = rows.order_by(values["order_by"])
            size = min(max(values["page_size"], 1), self.page_size)
            start = (max(values["page"], 1) - 1) * size
            total = rows.count()
            return {"count": total, "page": max(values["page"], 1), "page_size": size,
                    "results": [self.to_dict(item) for item in rows[start:start + size]]}

        plural = self._words()[1]
        return (self._tool(f"list_{plural}", arguments, body,
                           f"List {self.model._meta.verbose_name_plural}, a page at a time{self._about()}."),
                self._permission("view"), ToolAnnotations(read_only_hint=True))

    def _get_tool(self) -> tuple[Any, str, ToolAnnotations]:
        def body(values: dict[str, Any], ctx: Context) -> dict[str, Any]:
            return self.to_dict(self._object(ctx, "get", values["id"]))

        singular = self._words()[0]
        return (self._tool(f"get_{singular}", [self._key()], body,
                           f"One {self.model._meta.verbose_name} by its id{self._about()}."),
                self._permission("view"), ToolAnnotations(read_only_hint=True))

    def _create_tool(self) -> tuple[Any, str, ToolAnnotations]:
        arguments = [self._argument(name, optional=not self._required(name)) for name in self._writable()]

        def body(values: dict[str, Any], ctx: Context) -> dict[str, Any]:
            instance = self.model(**self._assignments(values))
            return self.to_dict(self._save(ctx, instance, created=True))

        return (self._tool(f"create_{self._words()[0]}", arguments, body,
                           f"Add a {self.model._meta.verbose_name}; returns it."),
                self._permission("add"), ToolAnnotations(destructive_hint=False))

    def _update_tool(self) -> tuple[Any, str, ToolAnnotations]:
        arguments = [self._key()] + [self._argument(name, optional=True, purpose="The new {}; leave out to keep it")
                                     for name in self._writable()]

        def body(values: dict[str, Any], ctx: Context) -> dict[str, Any]:
            instance = self._object(ctx, "update", values["id"])
            for attribute, value in self._assignments(values).items():
                setattr(instance, attribute, value)
            return self.to_dict(self._save(ctx, instance, created=False))

        return (self._tool(f"update_{self._words()[0]}", arguments, body,
                           f"Change a {self.model._meta.verbose_name}: only the fields given; returns it."),
                self._permission("change"), ToolAnnotations(destructive_hint=True, idempotent_hint=True))

    def _delete_tool(self) -> tuple[Any, str, ToolAnnotations]:
        words = self.model._meta.verbose_name

        def body(values: dict[str, Any], ctx: Context) -> str:
            instance = self._object(ctx, "delete", values["id"])
            if self.confirm:
                answer = ctx.elicit(f"Delete {words} {values['id']} ({instance})?", schema=Confirm)
                if answer.action != "accept" or not answer.data.confirm:
                    return f"Kept {words} {values['id']}."
            instance.delete()
            return f"Deleted {words} {values['id']}."

        asks = " after asking you to confirm" if self.confirm else ""
        return (self._tool(f"delete_{self._words()[0]}", [self._key()], body, f"Delete a {words}{asks}."),
                self._permission("delete"), ToolAnnotations(destructive_hint=True))

    # --- the parts -------------------------------------------------------------------------------
    def _request(self, ctx: Context, verb: str) -> HttpRequest:
        return call_request(ctx.user, f"{verb}_{self._words()[0]}")

    def _object(self, ctx: Context, verb: str, key: Any) -> models.Model:
        found = self.get_queryset(self._request(ctx, verb)).filter(pk=key).first()
        if found is None:
            raise ToolError(f"No {self.model._meta.verbose_name} with id {key} that you may reach; "
                            f"list_{self._words()[1]} shows those you may")
        return found

    def _save(self, ctx: Context, instance: models.Model, created: bool) -> models.Model:
        """Validate what the tool writes, as a ModelForm does: the written fields (a foreign key
        within ``related_queryset``), the model's ``clean()``, and uniqueness among written fields;
        fields the tool does not write are the model's and ``before_save``'s to fill."""
        request = self._request(ctx, "create" if created else "update")
        self.before_save(request, instance, created)
        problems = self._unreachable(request, instance)
        written = set(self._writable()) - set(problems)
        try:
            instance.full_clean(exclude=[field.name for field in self.model._meta.fields if field.name not in written])
        except ValidationError as invalid:
            problems.update(invalid.message_dict)
        if problems:
            raise ToolError("Not saved: " + "; ".join(
                " ".join(errors) if name == NON_FIELD_ERRORS else f"{name}: {' '.join(errors)}"
                for name, errors in problems.items()))
        with transaction.atomic():
            instance.save()
        return instance

    def _unreachable(self, request: HttpRequest, instance: models.Model) -> dict[str, list[str]]:
        """The written foreign keys that point outside what the caller may reach: one message
        whether the row is missing or someone else's, so an answer never tells which ids exist."""
        problems = {}
        for name in self._writable():
            field = self.model._meta.get_field(name)
            value = getattr(instance, field.attname)
            if not isinstance(field, models.ForeignKey) or value is None:
                continue
            if not self.related_queryset(request, field).filter(**{field.target_field.name: value}).exists():
                words = field.related_model._meta.verbose_name
                problems[name] = [f"No {words} with id {value} that you may reach."]
        return problems

    def _assignments(self, values: dict[str, Any]) -> dict[str, Any]:
        """The model attributes the arguments set (a foreign key by its ``_id`` attribute); an
        argument left out (``None``) keeps the field's default, or its value on update."""
        return {self.model._meta.get_field(name).attname: value for name, value in values.items()
                if name in self._writable() and value is not None}

    def _tool(self, name: str, arguments: list[Argument], body: Any, description: str) -> Any:
        returns = str if name.startswith("delete_") else dict[str, Any]
        return tool_function(name, arguments, body, description=description, returns=returns)

    def _key(self) -> Argument:
        pk = self.model._meta.pk
        return Argument("id", _python_type(pk), ..., f"The {self.model._meta.verbose_name}'s id")

    def _argument(self, name: str, optional: bool, purpose: str = "{}") -> Argument:
        field = self.model._meta.get_field(name)
        annotation = _python_type(field)
        if getattr(field, "choices", None):
            annotation = Literal[tuple(value for value, _ in field.flatchoices)]
        if optional or field.null:
            annotation = Optional[annotation]
        words = purpose.format(self._label(name))
        help_text = str(getattr(field, "help_text", "") or "")
        description = f"{words[:1].upper()}{words[1:]}" + (f" ({help_text})" if help_text else "")
        return Argument(name, annotation, None if optional else ..., description)

    def _label(self, name: str) -> str:
        """A field's words for a description; a path across relations (``author__name``) as its steps."""
        if "__" in name:
            return name.replace("__", " ")
        return str(getattr(self.model._meta.get_field(name), "verbose_name", name))

    def _required(self, name: str) -> bool:
        field = self.model._meta.get_field(name)
        return not (field.blank or field.null or field.has_default())

    def _shown(self) -> list[models.Field]:
        concrete = [field for field in self.model._meta.concrete_fields]
        if self.fields == "__all__":
            return concrete
        return [self.model._meta.get_field(name) for name in self.fields]

    def _writable(self) -> list[str]:
        names = [field.name for field in self._shown()] if self.write_fields == "__all__" else self.write_fields or ()
        return [name for name in names
                if (field := self.model._meta.get_field(name)).editable and not field.primary_key]

    def _permission(self, action: str) -> str:
        meta = self.model._meta
        return f"{meta.app_label}.{action}_{meta.model_name}"

    def _words(self) -> tuple[str, str]:
        if self.name:
            return self.name, f"{self.name}s"
        meta = self.model._meta
        return (slugify(str(meta.verbose_name)).replace("-", "_"),
                slugify(str(meta.verbose_name_plural)).replace("-", "_"))

    def _about(self) -> str:
        doc = (self.model.__doc__ or "").strip()
        return "" if not doc or doc.startswith(f"{self.model.__name__}(") else f" ({doc})"

    def _check(self) -> None:
        """Mistakes in the declaration fail at start-up, with the name of what is wrong."""
        if not isinstance(getattr(self, "model", None), type) or not issubclass(self.model, models.Model):
            raise TypeError(f"{type(self).__name__}.model must be a Django model class")
        names = {field.name for field in self.model._meta.get_fields()}
        for kind in ("fields", "filters", "search", "ordering", "write_fields"):
            declared = getattr(self, kind)
            if declared is None or declared == "__all__":
                continue
            # search and ordering may follow relations (author__name); the first step must exist
            paths = kind in ("search", "ordering")
            unknown = [name for name in declared if (name.split("__")[0] if paths else name) not in names]
            if unknown:
                raise ValueError(f"{type(self).__name__}.{kind} names {unknown}, which {self.model.__name__} "
                                 f"does not have; its fields are {sorted(names)}")
        if self.page_size < 1:
            raise ValueError(f"{type(self).__name__}.page_size must be at least 1")
        if (self.create or self.update) and self.write_fields is None:
            raise ValueError(f"{type(self).__name__} writes (create or update) but names no write_fields: list the "
                             "fields callers may set, or write_fields = '__all__' for every shown editable field")


def _python_type(field: Any) -> Any:
    for kind, annotation in _TYPES:
        if isinstance(field, kind):
            return annotation
    return str
