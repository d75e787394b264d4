"""Multi-round-trip requests (2026-07-28): a server answers ``tools/call``, ``prompts/get`` or
``resources/read`` with ``input_required``, asking the client to sample, list its roots or elicit,
and the client sends the request again with the answers and the state it was handed."""

from __future__ import annotations

import functools
from typing import Annotated, Any, ClassVar, Literal, TypeAlias

from pydantic import Field, TypeAdapter, ValidationError, model_validator

from minimcp.types.base import RequestParams, Result
from minimcp.types.elicitation import ElicitRequest, ElicitResult
from minimcp.types.roots import ListRootsRequest, ListRootsResult
from minimcp.types.sampling import CreateMessageRequest, CreateMessageResult, CreateMessageResultWithTools

InputRequest: TypeAlias = Annotated[
    CreateMessageRequest | ListRootsRequest | ElicitRequest, Field(discriminator="method")
]
InputRequests: TypeAlias = dict[str, InputRequest]

# Not discriminated: the wire carries no tag. The server parses each answer by the method of the
# request it answers (see parse_input_response); validating against this union is a best guess.
InputResponse: TypeAlias = (
    CreateMessageResult | CreateMessageResultWithTools | ListRootsResult | ElicitResult
)
InputResponses: TypeAlias = dict[str, InputResponse]


class InputResponseRequestParams(RequestParams):
    """The params of a request a server may answer with ``input_required`` (2026-07-28): the client
    sends it again with the answers and the state it was handed."""

    input_responses: InputResponses | None = None
    request_state: str | None = None


def parse_input_response(method: str, data: Any) -> InputResponse:
    """Validate a client's answer to the input request of ``method`` (``KeyError`` if unknown)."""
    return _adapter(method).validate_python(data)


def guess_input_response(data: Any) -> InputResponse | Any:
    """An answer typed by its shape alone, as ``ctx.input_responses`` hands it to a handler that
    built its own ``InputRequiredResult`` (and so knows which question each key asked); an answer
    no model fits is returned as it came."""
    try:
        return _adapter("input response").validate_python(data)
    except ValidationError:
        return data


class InputRequiredResult(Result):
    result_type: Literal["input_required"] = "input_required"
    input_requests: InputRequests | None = None
    request_state: str | None = None

    _input_required: ClassVar[bool] = True

    @model_validator(mode="after")
    def _requires_requests_or_state(self) -> InputRequiredResult:
        if self.input_requests is None and self.request_state is None:
            raise ValueError(
                "InputRequiredResult requires at least one of input_requests or request_state"
            )
        return self


#: The answers validated with a ``TypeAdapter``, by name: an input request's method for the answers
#: ``parse_input_response`` reads, and ``"input response"`` for ``guess_input_response``.
_ADAPTED: dict[str, Any] = {
    "sampling/createMessage": CreateMessageResult | CreateMessageResultWithTools,
    "roots/list": ListRootsResult,
    "elicitation/create": ElicitResult,
    # Tried in this order, each needing a field the others lack: action, roots, then sampling.
    "input response": Annotated[
        ElicitResult | ListRootsResult | CreateMessageResult | CreateMessageResultWithTools,
        Field(union_mode="left_to_right"),
    ],
}


@functools.cache
def _adapter(name: str) -> TypeAdapter[Any]:
    """The ``TypeAdapter`` of one of ``_ADAPTED``, built on first use: building them at import,
    together with the models they pull in, cost a tenth of ``import minimcp.server``."""
    return TypeAdapter(_ADAPTED[name])
