"""Elicitation outcomes and the form-schema rule.

A form question is a flat pydantic model. ``form_schema`` renders it to the JSON Schema the client
shows as a form and refuses anything the spec's ``PrimitiveSchemaDefinition`` cannot express,
before a byte is sent. ``outcome_of`` turns the client's ``ElicitResult`` back into one of three
typed outcomes, validating accepted content against the model, so ``result.data`` only exists on
an accept and a type checker can narrow on ``result.action``.

``elicit_with_validation``, ``elicit_url`` and ``render_elicitation_schema`` are the official
low-level helpers of the same names, for a handler that holds a ``ServerSession`` rather than a
tool's ``Context`` (whose ``ctx.elicit`` / ``ctx.elicit_url`` do the same, in both eras).
"""

from __future__ import annotations

import copy
import functools
from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, Union

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import TypeAliasType

from minimcp.types import RequestId, dump

if TYPE_CHECKING:
    from minimcp.server.core.context import ServerSession

T = TypeVar("T", bound=BaseModel)


class AcceptedElicitation(BaseModel, Generic[T]):
    """The user submitted the form; ``data`` is the validated model instance."""

    model_config = ConfigDict(defer_build=True)

    action: Literal["accept"] = "accept"
    data: T


class AcceptedUrlElicitation(BaseModel):
    """The user agreed to open the URL (not that the out-of-band step finished)."""

    model_config = ConfigDict(defer_build=True)

    action: Literal["accept"] = "accept"


class DeclinedElicitation(BaseModel):
    """The user explicitly said no."""

    model_config = ConfigDict(defer_build=True)

    action: Literal["decline"] = "decline"


class CancelledElicitation(BaseModel):
    """The user dismissed the question without choosing."""

    model_config = ConfigDict(defer_build=True)

    action: Literal["cancel"] = "cancel"


ElicitationResult = TypeAliasType(
    "ElicitationResult",
    Union[AcceptedElicitation[T], DeclinedElicitation, CancelledElicitation],
    type_params=(T,),
)
UrlElicitationResult = Union[AcceptedUrlElicitation, DeclinedElicitation, CancelledElicitation]

_STRING_FORMATS = {"date", "date-time", "email", "uri"}
_NULL = {"type": "null"}


@functools.lru_cache(maxsize=256)
def form_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """The ``requestedSchema`` for ``schema``, or ``TypeError`` naming the first field a form cannot hold.

    Cached per model class (rendering is most of the cost of a question); callers must not mutate it.
    """
    rendered = schema.model_json_schema()
    definitions = rendered.pop("$defs", {})
    properties = {}
    for name, prop in rendered.get("properties", {}).items():
        prop = _inline_enum_ref(_strip_optional(prop), definitions)
        if not _is_primitive(prop):
            raise TypeError(
                f"Elicitation schema field {name!r} rendered as {prop!r}, which is not a valid "
                "PrimitiveSchemaDefinition"
            )
        properties[name] = prop
    rendered["properties"] = properties
    return rendered


def _strip_optional(prop: dict[str, Any]) -> dict[str, Any]:
    """``X | None`` renders as ``X``: a form expresses optionality only through ``required``."""
    variants = prop.get("anyOf")
    if isinstance(variants, list) and _NULL in variants and len(variants) == 2:
        (inner,) = [v for v in variants if v != _NULL]
        prop = {**{k: v for k, v in prop.items() if k != "anyOf"}, **inner}
    if "default" in prop and prop["default"] is None:
        prop = {k: v for k, v in prop.items() if k != "default"}
    return prop


def _inline_enum_ref(prop: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """A Python ``Enum`` of strings renders as a ``$ref``; forms need the enum inline."""
    ref = prop.get("$ref")
    if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
        return prop
    target = definitions.get(ref.removeprefix("#/$defs/"), {})
    if target.get("type") != "string" or "enum" not in target:
        return prop
    inlined = {k: v for k, v in prop.items() if k != "$ref"}
    inlined.update({"type": "string", "enum": target["enum"]})
    return inlined


def _is_string_enum(values: Any) -> bool:
    return isinstance(values, list) and bool(values) and all(isinstance(v, str) for v in values)


def _is_titled_options(options: Any) -> bool:
    return isinstance(options, list) and bool(options) and all(
        isinstance(o, dict) and isinstance(o.get("const"), str) for o in options
    )


def _is_primitive(prop: dict[str, Any]) -> bool:
    kind = prop.get("type")
    if kind == "string":
        if "format" in prop and prop["format"] not in _STRING_FORMATS:
            return False
        if "enum" in prop:
            return _is_string_enum(prop["enum"])
        if "oneOf" in prop:
            return _is_titled_options(prop["oneOf"])
        return True
    if kind in ("number", "integer", "boolean"):
        return True
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, dict):
            return False
        if "enum" in items:
            return items.get("type", "string") == "string" and _is_string_enum(items["enum"])
        return _is_titled_options(items.get("anyOf"))
    return False


class UnusableAnswer(ValueError):
    """The client's answer to a question cannot be used (no content, content that does not fit the
    form): the client's doing, not the tool's, so a tool that lets it escape reports its text,
    which says what to send instead."""


def outcome_of(
    result: dict[str, Any], schema: type[T] | None
) -> AcceptedElicitation[T] | AcceptedUrlElicitation | DeclinedElicitation | CancelledElicitation:
    """The typed outcome of an ``ElicitResult``; ``schema`` is ``None`` for URL mode.

    Raises ``UnusableAnswer`` (a ``ValueError``) when an accepted form answer is missing or does not
    fit the model, so a tool can never act on garbage.
    """
    action = result.get("action")
    if action == "decline":
        return DeclinedElicitation()
    if action == "cancel":
        return CancelledElicitation()
    if action != "accept":
        raise UnusableAnswer(f"Received an elicitation result with an unknown action: {action!r}; "
                             "answer 'accept', 'decline' or 'cancel'")
    if schema is None:
        return AcceptedUrlElicitation()
    content = result.get("content")
    if content is None:
        raise UnusableAnswer("Received an accepted elicitation with no content; an accepted form answer carries "
                             "the form's fields as its content")
    try:
        data = schema.model_validate(content)
    except ValidationError as invalid:
        raise UnusableAnswer("Received an accepted elicitation whose content does not match the requested schema: "
                             + _misfits(invalid)) from None
    return _accepted(schema)(data=data)


def _misfits(invalid: ValidationError, shown: int = 3, each: int = 200) -> str:
    """What did not fit, field by field, in words short enough for an error message."""
    misfits = [f"{'.'.join(map(str, error['loc'])) or 'content'}: {error['msg']}"[:each]
               for error in invalid.errors()[:shown]]
    more = invalid.error_count() - shown
    return "; ".join(misfits) + (f"; and {more} more" if more > 0 else "")


@functools.lru_cache(maxsize=256)
def _accepted(schema: type[T]) -> type[AcceptedElicitation[T]]:
    """``AcceptedElicitation[schema]``, parametrised once per model rather than on every answer."""
    return AcceptedElicitation[schema]  # type: ignore[valid-type]


def render_elicitation_schema(schema: type[BaseModel]) -> dict[str, Any]:
    """``schema`` as the ``requestedSchema`` of a form question (a copy of ``form_schema``'s cached
    rendering, so the caller may change it); ``TypeError`` for a field a form cannot hold."""
    return copy.deepcopy(form_schema(schema))


def elicit_with_validation(session: ServerSession, message: str, schema: type[T],
                           related_request_id: RequestId | None = None) -> ElicitationResult[T]:
    """Ask ``session``'s client to fill ``schema`` in (form mode; a legacy connection) and return
    the validated outcome; ``ValueError`` when an accepted answer is missing or does not fit."""
    answer = session.elicit_form(message, form_schema(schema), related_request_id)
    return outcome_of(dump(answer), schema)  # type: ignore[return-value]  # accept carries data when schema is given


def elicit_url(session: ServerSession, message: str, url: str, elicitation_id: str,
               related_request_id: RequestId | None = None) -> UrlElicitationResult:
    """Send the user to ``url`` (URL mode; a legacy connection) and return whether they agreed to go."""
    answer = session.elicit_url(message, url, elicitation_id, related_request_id)
    return outcome_of(dump(answer), None)  # type: ignore[return-value]  # without a schema an accept is the URL one
