"""Tools made from a description the host already has (a model's fields, a serializer, a route, an
OpenAPI operation) rather than from a hand-written signature.

A generated tool still registers as a plain function, so it travels the same path as a decorated
one (argument validation, the input schema, permission rules, both eras). What differs is where the
signature comes from: :func:`tool_function` builds one from a list of :class:`Argument`, under
identifiers of its own, so a wire name that is no Python identifier (``X-Request-Id``) or that
clashes with the context parameter still works; the body receives the arguments by wire name.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable

from pydantic import Field, WithJsonSchema

from minimcp.server.app.context import Context
from minimcp.server.app.exceptions import ToolError

#: What a generated tool runs: the validated arguments by wire name, and the call's context.
Body = Callable[[dict[str, Any], Context], Any]

_CONTEXT = "__minimcp_context"


@dataclass(frozen=True)
class Argument:
    """One argument of a generated tool. ``default`` is ``...`` for a required one; ``schema``
    replaces the JSON Schema pydantic would publish for ``annotation`` (an OpenAPI parameter's own)."""

    name: str
    annotation: Any = Any
    default: Any = ...
    description: str | None = None
    schema: dict[str, Any] | None = field(default=None, hash=False, compare=False)

    def parameter(self, identifier: str) -> inspect.Parameter:
        # An optional argument defaults to None here (nothing is sent), but the schema publishes the
        # default the described API applies (an OpenAPI ``default: 20``), not that None.
        documented = self.schema.get("default") if self.schema is not None and self.default is not ... else None
        extras: list[Any] = [Field(alias=self.name, description=self.description,
                                   json_schema_extra=None if documented is None else {"default": documented})]
        if self.schema is not None:
            extras.append(WithJsonSchema(self.schema))
        metadata = (self.annotation, *extras)  # Annotated[self.annotation, *extras] before Python 3.11
        annotation: Any = Annotated[metadata]
        default = inspect.Parameter.empty if self.default is ... else self.default
        return inspect.Parameter(identifier, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation)


def tool_function(name: str, arguments: Sequence[Argument], body: Body, *, description: str = "",
                  returns: Any = inspect.Signature.empty) -> Callable[..., Any]:
    """A function to register with ``add_tool``: its signature declares ``arguments`` (and
    ``returns``, for an output schema); a call hands them to ``body`` by wire name."""
    names = [argument.name for argument in arguments]
    if len(set(names)) != len(names):
        raise ValueError(f"tool {name!r} declares an argument twice: {names}")

    def call(**values: Any) -> Any:
        ctx = values.pop(_CONTEXT)
        return body(values, ctx)

    parameters = [argument.parameter(f"a{index}") for index, argument in enumerate(arguments)]
    parameters.append(inspect.Parameter(_CONTEXT, inspect.Parameter.KEYWORD_ONLY, annotation=Context))
    call.__signature__ = inspect.Signature(parameters, return_annotation=returns)  # type: ignore[attr-defined]
    call.__annotations__ = {p.name: p.annotation for p in parameters}
    if returns is not inspect.Signature.empty:
        call.__annotations__["return"] = returns
    call.__name__ = call.__qualname__ = name
    call.__doc__ = description
    return call


def http_answer(request: str, status: int, reason: str, text: str, excerpt: int = 2000) -> str:
    """What a tool that forwards to an HTTP endpoint answers: the body, or for a status of 400 or
    more a ``ToolError`` naming the ``request``, the status and at most ``excerpt`` characters of
    the body (the model reads why; a huge error page does not flood its context)."""
    if status >= 400:
        more = len(text) - excerpt
        cut = text[:excerpt] + (f"... ({more} more characters)" if more > 0 else "")
        raise ToolError(f"{request} answered {status} {reason}: {cut}")
    return text or f"{request}: {status} {reason}"
