"""What every wire model is built from: the model base and :func:`dump`, the JSON-RPC version and
the scalar aliases, and the bases of params, requests, notifications and results.

Every other module of :mod:`minimcp.types` builds on this one, which imports none of them.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Final, Generic, Literal, TypeAlias, TypeVar, Union

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

#: The protocol version every envelope carries.
JSONRPC_VERSION: Final = "2.0"

RequestId: TypeAlias = str | int
ProgressToken: TypeAlias = str | int
Role: TypeAlias = Literal["user", "assistant"]
Cursor: TypeAlias = str

# A `_meta` object. Its keys are wire names kept verbatim ("progressToken", the reserved
# "io.modelcontextprotocol/..." keys of minimcp.types.lifecycle): it is a dict, so nothing
# camel-cases it.
Meta: TypeAlias = dict[str, Any]
RequestParamsMeta: TypeAlias = Meta

ResultType: TypeAlias = Union[Literal["complete", "input_required"], str]
CORE_RESULT_TYPES: frozenset[str] = frozenset({"complete", "input_required"})


class MCPModel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow", defer_build=True)


def dump(model: BaseModel) -> dict[str, Any]:
    """The wire form of ``model``: camelCase keys, ``_meta``, no ``None`` fields, JSON values.

    The serializer is called as pydantic's ``model_dump`` calls it, without that method's Python
    frame (a quarter of the cost of dumping a small result, paid on every answer); a model that
    overrides ``model_dump`` gets its own."""
    if type(model).model_dump is not BaseModel.model_dump:
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return model.__pydantic_serializer__.to_python(model, by_alias=True, exclude_none=True, mode="json")


class RequestParams(MCPModel):
    meta: RequestParamsMeta | None = Field(default=None, alias="_meta")


class PaginatedRequestParams(RequestParams):
    cursor: Cursor | None = None


class NotificationParams(MCPModel):
    meta: Meta | None = Field(default=None, alias="_meta")


RequestParamsT = TypeVar("RequestParamsT", bound=Union[RequestParams, dict[str, Any], None])
NotificationParamsT = TypeVar("NotificationParamsT", bound=Union[NotificationParams, dict[str, Any], None])
MethodT = TypeVar("MethodT", bound=str)


class Request(MCPModel, Generic[RequestParamsT, MethodT]):
    """A request's ``{method, params}``; subclass it for a vendor method of your own
    (``class SearchRequest(Request[SearchParams, Literal["acme/search"]])``) and send it with
    ``session.send_request(SearchRequest(...), SearchResult)``."""

    method: MethodT
    params: RequestParamsT

    name_param: ClassVar[str | None] = None
    """The params key (its wire name) whose value the client sends as the ``Mcp-Name`` header, as the
    core methods send their target's name: a subclass sets it by plain assignment (``name_param =
    "jobId"``), and sending a request whose params lack that string is a ``ValueError``."""


class Notification(MCPModel, Generic[NotificationParamsT, MethodT]):
    """A notification's ``{method, params}``, the counterpart of :class:`Request`."""

    method: MethodT
    params: NotificationParamsT


class Result(MCPModel):
    """Base of every result.

    ``result_type`` is declared by each result that has one, last among its fields as officially
    (printed and dumped in the official order): ``"complete"`` on the results of the core requests
    (the server strips it from the legacy wire), ``None`` on ``EmptyResult`` (it dumps as ``{}``),
    and ``"input_required"`` on :class:`InputRequiredResult`; the answers a client gives (an
    ``ElicitResult``, a ``CreateMessageResult``...) and ``InitializeResult`` have none.
    """

    meta: Meta | None = Field(default=None, alias="_meta")

    # Whether the result may be an input_required one: only InputRequiredResult (and what extends
    # it) sets it, so this module need not know that class.
    _input_required: ClassVar[bool] = False

    @field_validator("result_type", check_fields=False)
    @classmethod
    def _only_input_required_result_is_input_required(cls, value: str | None) -> str | None:
        # Without this, an input_required answer would validate as, say, an empty CallToolResult.
        if value == "input_required" and not cls._input_required:
            raise ValueError(
                f"an input_required result is an InputRequiredResult, not {cls.__name__}"
            )
        return value


class PaginatedResult(Result):
    next_cursor: Cursor | None = None


class CacheableResult(Result):
    """A result the client may cache (2026-07-28, where both fields are required on the wire).

    The defaults are the official SDK's: immediately stale and private, so a handler that says
    nothing never enables shared caching by accident (``cache_hints=`` on the server changes them
    per method). Like ``result_type``, they stay off the legacy wire.
    """

    ttl_ms: Annotated[int, Field(ge=0)] = 0
    cache_scope: Literal["public", "private"] = "private"


class EmptyResult(Result):
    """Success without data: ``{}``, or ``{"resultType": "complete"}`` on 2026-07-28."""

    result_type: str | None = None


class BaseMetadata(MCPModel):
    name: str
    title: str | None = None


class Icon(MCPModel):
    src: str
    mime_type: str | None = None
    sizes: list[str] | None = None
    theme: Literal["light", "dark"] | None = None
