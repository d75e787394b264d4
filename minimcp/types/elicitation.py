"""Elicitation: ``elicitation/create`` in form and URL mode, the primitives a form's requested
schema is made of, the answer, and the notification that a URL elicitation is complete."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, TypeAlias, Union

from pydantic import BaseModel, Discriminator, Tag, TypeAdapter

from minimcp.types.base import MCPModel, NotificationParams, RequestParams, Result

#: The JSON Schema object an elicitation asks with (``requestedSchema``).
ElicitRequestedSchema: TypeAlias = dict[str, Any]

# --- A form's requested-schema primitives -------------------------------------------------------


class StringSchema(MCPModel):
    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    min_length: int | None = None
    max_length: int | None = None
    format: Literal["date", "date-time", "email", "uri"] | None = None
    default: str | None = None


class NumberSchema(MCPModel):
    type: Literal["number", "integer"]
    title: str | None = None
    description: str | None = None
    minimum: int | float | None = None
    maximum: int | float | None = None
    default: int | float | None = None


class BooleanSchema(MCPModel):
    type: Literal["boolean"] = "boolean"
    title: str | None = None
    description: str | None = None
    default: bool | None = None


class EnumOption(MCPModel):
    const: str
    title: str


class UntitledSingleSelectEnumSchema(MCPModel):
    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    default: str | None = None


class TitledSingleSelectEnumSchema(MCPModel):
    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    one_of: list[EnumOption]
    default: str | None = None


class UntitledMultiSelectItems(MCPModel):
    type: Literal["string"] = "string"
    enum: list[str]


class UntitledMultiSelectEnumSchema(MCPModel):
    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: UntitledMultiSelectItems
    default: list[str] | None = None


class TitledMultiSelectItems(MCPModel):
    any_of: list[EnumOption]


class TitledMultiSelectEnumSchema(MCPModel):
    type: Literal["array"] = "array"
    title: str | None = None
    description: str | None = None
    min_items: int | None = None
    max_items: int | None = None
    items: TitledMultiSelectItems
    default: list[str] | None = None


class LegacyTitledEnumSchema(MCPModel):
    type: Literal["string"] = "string"
    title: str | None = None
    description: str | None = None
    enum: list[str]
    enum_names: list[str] | None = None
    default: str | None = None


def _primitive_schema_kind(value: Any) -> str | None:
    """Which PrimitiveSchemaDefinition a property is; several share ``type: "string"``."""
    if isinstance(value, BaseModel):
        return _PRIMITIVE_SCHEMA_KIND_BY_CLASS.get(type(value))
    if not isinstance(value, dict):
        return None
    kind = value.get("type")
    if kind in ("number", "integer"):
        return "number"
    if kind == "array":
        items = value.get("items")
        return "titled-multi" if isinstance(items, dict) and "anyOf" in items else "untitled-multi"
    if kind == "string":
        if "oneOf" in value:
            return "titled-single"
        if "enumNames" in value:
            return "legacy-titled"
        return "untitled-single" if "enum" in value else "string"
    return kind if kind == "boolean" else None


_PRIMITIVE_SCHEMA_KIND_BY_CLASS: dict[type[BaseModel], str] = {
    StringSchema: "string",
    NumberSchema: "number",
    BooleanSchema: "boolean",
    UntitledSingleSelectEnumSchema: "untitled-single",
    TitledSingleSelectEnumSchema: "titled-single",
    UntitledMultiSelectEnumSchema: "untitled-multi",
    TitledMultiSelectEnumSchema: "titled-multi",
    LegacyTitledEnumSchema: "legacy-titled",
}

PrimitiveSchemaDefinition: TypeAlias = Annotated[
    Union[
        Annotated[StringSchema, Tag("string")],
        Annotated[NumberSchema, Tag("number")],
        Annotated[BooleanSchema, Tag("boolean")],
        Annotated[UntitledSingleSelectEnumSchema, Tag("untitled-single")],
        Annotated[TitledSingleSelectEnumSchema, Tag("titled-single")],
        Annotated[UntitledMultiSelectEnumSchema, Tag("untitled-multi")],
        Annotated[TitledMultiSelectEnumSchema, Tag("titled-multi")],
        Annotated[LegacyTitledEnumSchema, Tag("legacy-titled")],
    ],
    Discriminator(_primitive_schema_kind),
]

# --- The request, the answer and the completion -------------------------------------------------


class ElicitRequestFormParams(RequestParams):
    """Form mode. ``requested_schema`` is a plain dict, passed through untouched."""

    mode: Literal["form"] = "form"
    message: str
    requested_schema: dict[str, Any]


class ElicitRequestURLParams(RequestParams):
    """URL mode. ``elicitation_id`` is required on 2025-11-25 and absent on 2026-07-28."""

    mode: Literal["url"] = "url"
    message: str
    url: str
    elicitation_id: str | None = None


def _elicit_mode(value: Any) -> str | None:
    # The spec says a missing mode MUST be treated as "form" (it predates URL mode).
    if isinstance(value, dict):
        mode = value.get("mode", "form")
    else:
        mode = getattr(value, "mode", None)
    return mode if isinstance(mode, str) else None


ElicitRequestParams: TypeAlias = Annotated[
    Union[
        Annotated[ElicitRequestFormParams, Tag("form")],
        Annotated[ElicitRequestURLParams, Tag("url")],
    ],
    Discriminator(_elicit_mode),
]


def parse_elicit_params(data: dict[str, Any]) -> ElicitRequestFormParams | ElicitRequestURLParams:
    """Validate ``elicitation/create`` params by ``mode``; a missing ``mode`` is form mode."""
    return _params_adapter().validate_python(data)


@functools.cache
def _params_adapter() -> TypeAdapter[ElicitRequestFormParams | ElicitRequestURLParams]:
    """Built on first use, as every ``TypeAdapter`` of the wire unions: building them at import,
    together with the models they pull in, cost a tenth of ``import minimcp.server``."""
    return TypeAdapter(ElicitRequestParams)


class ElicitRequest(MCPModel):
    method: Literal["elicitation/create"] = "elicitation/create"
    params: ElicitRequestParams


class ElicitResult(Result):
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, str | int | float | bool | list[str] | None] | None = None


class ElicitCompleteNotificationParams(NotificationParams):
    elicitation_id: str


class ElicitCompleteNotification(MCPModel):
    method: Literal["notifications/elicitation/complete"] = "notifications/elicitation/complete"
    params: ElicitCompleteNotificationParams
