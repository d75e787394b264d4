"""Tools: a plain function, its schemas, and the conversion of what it returns into a result.

The input schema is the JSON Schema of a pydantic model built from the function's client-supplied
parameters; the output schema comes from the return annotation. Both are computed once, at
registration, together with the resolver graph, so a mistake in a signature fails at import.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import typing
from collections.abc import Iterable
from typing import Annotated, Any, Callable, Literal, get_args, get_origin, overload

import pydantic_core
from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from typing_extensions import is_typeddict

from minimcp.jsonrpc import MCPError
from minimcp.server.app.elicitation import UnusableAnswer
from minimcp.server.app.context import Context
from minimcp.server.app.exceptions import (
    InvalidSignature,
    ResourceError,
    ToolError,
    UnexpectedResourceError,
    UnexpectedToolError,
)
from minimcp.server.app.media import Audio, Image
from minimcp.server.app.resolve import ResolverGraph, ResolverKeys, _arms
from minimcp.server.app.signature import (
    arguments_model,
    model_stem,
    parameter_names,
    read_signature,
    require_sync,
    type_hints,
)
from minimcp.server.app.visibility import as_tags
from minimcp.shared.inbound import annotates_headers
from minimcp.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    ResourceLink,
    TextContent,
    ToolAnnotations,
)
from minimcp.types import Tool as ToolDefinition

logger = logging.getLogger("minimcp.server")

_CONTENT = (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
_UNSTRUCTURED = (*_CONTENT, Image, Audio, CallToolResult, InputRequiredResult)


def to_content(value: Any) -> list[Any]:
    """What a handler returned, as content blocks for the result (or message) model that takes them
    to validate: text as is, objects as indented JSON. Text comes as the block's wire form, which
    that model makes a ``TextContent`` of in one step, rather than as a model it would check again."""
    if isinstance(value, str):  # the common case first; no content type is a str
        return [{"type": "text", "text": value}]
    if value is None:
        return []
    if isinstance(value, _CONTENT):
        return [value]
    if isinstance(value, Image):
        return [value.to_image_content()]
    if isinstance(value, Audio):
        return [value.to_audio_content()]
    if isinstance(value, (list, tuple)):
        return [block for item in value for block in to_content(item)]
    return [{"type": "text", "text": pydantic_core.to_json(value, fallback=str, indent=2).decode()}]


def text_result(content: list[dict[str, Any]], structured: dict[str, Any] | None) -> dict[str, Any]:
    """What ``dump(CallToolResult(content=content, structured_content=structured))`` gives, key for
    key, for text blocks ``to_content`` made and an output ``_Output.structure`` made (both already
    JSON values, so the model would check and copy them only to give them back)."""
    result: dict[str, Any] = {"content": content}
    if structured is not None:
        result["structuredContent"] = structured
    result["isError"] = False
    result["resultType"] = "complete"
    return result


def error_result(text: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)


#: The keywords the official SDK's wire models of a tool's schemas declare, per era (legacy: its
#: 2025-11-25 ``InputSchema`` and ``OutputSchema``; else its 2026-07-28 ones): a listing sends those
#: first, in this order, and the others as the schema has them, so that a program printing a listed
#: schema prints the official line.
_LEADING_KEYWORDS: dict[bool, tuple[tuple[str, ...], tuple[str, ...]]] = {
    True: (("$schema", "properties", "required", "type"), ("$schema", "properties", "required", "type")),
    False: (("$schema", "type"), ("$schema",)),
}


def _keywords_first(schema: dict[str, Any], leading: tuple[str, ...]) -> dict[str, Any]:
    return {**{key: schema[key] for key in leading if key in schema}, **schema}


def as_listed(definition: ToolDefinition, legacy: bool) -> ToolDefinition:
    """``definition`` with its schemas' keywords in the order the official SDK lists them in the era
    (``legacy`` or 2026-07-28); ``mcp.list_tools()`` keeps the order the schemas were made in, as there."""
    inputs, outputs = _LEADING_KEYWORDS[legacy]
    update = {"input_schema": _keywords_first(definition.input_schema, inputs)}
    if definition.output_schema is not None:
        update["output_schema"] = _keywords_first(definition.output_schema, outputs)
    return definition.model_copy(update=update)


def failure_result(failure: ToolError) -> CallToolResult:
    """The ``is_error`` result a failed tool answers with: its message only. A crash's exception and
    traceback go to the server log; an anticipated failure is logged without one."""
    if isinstance(failure, UnexpectedToolError):
        logger.error("%s", failure, exc_info=failure.__cause__ or failure)
    else:
        logger.info("%r", str(failure))
    return error_result(str(failure))


#: Return annotations whose values of exactly that type validate and dump to themselves.
_VERBATIM = (str, int, bool)


class _Output:
    """How a return value becomes ``structured_content``: validated by ``adapter``, wrapped as
    ``{"result": ...}`` when the annotation is not an object.

    ``verbatim``: the annotation, when it is a bare ``str``, ``int`` or ``bool``; a value of exactly
    that type is its own output (the adapter would return it unchanged), so it skips the adapter.
    """

    def __init__(self, schema: dict[str, Any], adapter: TypeAdapter[Any], wrap: bool,
                 verbatim: type | None = None) -> None:
        self.schema = schema
        self.adapter = adapter
        self.wrap = wrap
        self.verbatim = verbatim

    def structure(self, value: Any) -> Any:
        if self.wrap:
            if type(value) is self.verbatim:
                return {"result": value}
            value = {"result": value}
        return self.adapter.dump_python(self.adapter.validate_python(value), mode="json", by_alias=True)


def _mentions_unstructured(annotation: Any) -> bool:
    for arm in _arms(annotation):
        base = get_origin(arm) or arm
        if inspect.isclass(base) and issubclass(base, _UNSTRUCTURED):
            return True
        if base in (list, tuple) and any(_mentions_unstructured(a) for a in get_args(arm) if a is not Ellipsis):
            return True
    return False


def _is_object(annotation: Any) -> bool:
    base = get_origin(annotation) or annotation
    if get_origin(annotation) is Annotated:
        return _is_object(get_args(annotation)[0])
    if base is dict:
        args = get_args(annotation)
        return not args or args[0] is str
    return inspect.isclass(base) and (
        issubclass(base, BaseModel) or is_typeddict(base) or dataclasses.is_dataclass(base)
    )


def _annotated_class_model(annotation: Any) -> type[BaseModel] | None:
    """A plain class with annotations is read through its attributes, and a ``TypedDict`` through
    its keys (``typing.TypedDict`` before Python 3.12 is one pydantic will not take directly)."""
    if not inspect.isclass(annotation) or annotation.__module__ == "builtins":
        return None
    try:
        fields = typing.get_type_hints(annotation, include_extras=True)
    except Exception:
        return None
    if not fields:
        return None
    if is_typeddict(annotation):
        # is_typeddict() does not narrow `annotation`, so mypy cannot see this TypedDict attribute
        required: frozenset[str] = annotation.__required_keys__  # type: ignore[attr-defined]
        defaults = {name: None for name in fields if name not in required}
    else:  # a class attribute set in the body is the field's default
        defaults = {name: getattr(annotation, name) for name in fields if hasattr(annotation, name)}
    definitions: dict[str, Any] = {name: (hint, defaults.get(name, ...)) for name, hint in fields.items()}
    return create_model(
        annotation.__name__, __config__=ConfigDict(from_attributes=True),
        __doc__=annotation.__doc__ if is_typeddict(annotation) else None,  # a TypedDict's docstring describes it
        **definitions,
    )


def _declared_output(annotation: Any) -> Any:
    """The part of a return annotation that describes structured output.

    ``Annotated[CallToolResult, Model]`` declares ``Model`` for a result built by hand, and the
    ``InputRequiredResult`` arm of ``T | InputRequiredResult`` is an interim answer, not output.
    """
    if get_origin(annotation) is Annotated:
        base, *extras = get_args(annotation)
        if inspect.isclass(base) and issubclass(base, CallToolResult) and extras:
            return extras[0]
    arms = [arm for arm in _arms(annotation) if not (inspect.isclass(arm) and issubclass(arm, InputRequiredResult))]
    if len(arms) != len(_arms(annotation)) and arms:
        return arms[0] if len(arms) == 1 else typing.Union[tuple(arms)]
    return annotation


def output_plan(name: str, fn: Callable[..., Any], structured_output: bool | None) -> _Output | None:
    returns = inspect.signature(fn).return_annotation
    if structured_output is False:
        return None
    if returns is inspect.Signature.empty:
        if structured_output:
            raise InvalidSignature(f"Function {name}: return annotation required for structured output")
        return None
    annotation = _declared_output(type_hints(fn).get("return", returns))
    if annotation is None or annotation is type(None):
        annotation = type(None)
    if _mentions_unstructured(annotation):
        return None
    try:
        if _is_object(annotation) and not is_typeddict(annotation):
            adapter: TypeAdapter[Any] = TypeAdapter(annotation)
            if get_origin(annotation) is dict or annotation is dict:
                # titled as the official SDK titles it, through the field, so the keys come in its order
                titled: Any = Annotated[annotation, Field(title=f"{name}DictOutput")]
                schema = TypeAdapter(titled).json_schema()
            else:
                schema = adapter.json_schema()
            return _Output(schema, adapter, wrap=False)
        model = _annotated_class_model(annotation)
        if model is not None:
            return _Output(model.model_json_schema(), TypeAdapter(model), wrap=False)
        if inspect.isclass(annotation) and annotation.__module__ != "builtins" and not _is_plain_data(annotation):
            raise TypeError("not serializable")
        wrapper = create_model(f"{name}Output", result=(annotation, ...))
        return _Output(wrapper.model_json_schema(), TypeAdapter(wrapper), wrap=True,
                       verbatim=annotation if annotation in _VERBATIM else None)
    except Exception:
        if structured_output:
            raise InvalidSignature(
                f"Function {name}: return type {annotation} is not serializable for structured output"
            ) from None
        return None


TaskSupport = Literal["optional", "required"] | bool


def task_support(task: TaskSupport) -> Literal["optional", "required"] | None:
    """A tool's ``task=`` setting: ``None`` (never a task), ``"optional"`` (``True``) or ``"required"``."""
    if task is False or task is None:
        return None
    if task is True:
        return "optional"
    if task in ("optional", "required"):
        return task
    raise ValueError(f"task= must be True, False, 'optional' or 'required', not {task!r}")


def _is_plain_data(annotation: Any) -> bool:
    return issubclass(annotation, (str, int, float, bool, bytes, list, tuple, dict, set))


class Tool:
    """A registered tool: the function, its schemas and its resolver graph."""

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        title: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        icons: list[Any] | None = None,
        meta: dict[str, Any] | None = None,
        structured_output: bool | None = None,
        resolver_keys: ResolverKeys | None = None,
        required_scopes: list[str] | None = None,
        task: TaskSupport = False,
        tags: Iterable[str] | None = None,
        timeout: float | None = None,
    ) -> None:
        name = name or getattr(fn, "__name__", None)
        if name is None or name == "<lambda>":
            raise ValueError("You must provide a name for lambda functions")
        require_sync(fn, name)
        self.fn = fn
        self.name = name
        self.title = title
        self.description = description or fn.__doc__ or ""  # the raw docstring, as the official SDK sends it
        self.annotations = annotations
        self.icons = icons
        self.meta = meta
        self.required_scopes = list(required_scopes or [])
        """OAuth scopes a caller's token must hold, beyond the endpoint's own (checked over HTTP)."""
        self.tags = as_tags(tags)
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        self.timeout = timeout
        """Seconds a ``tools/call`` may take before the client is answered that it timed out."""
        """What ``mcp.enable``/``mcp.disable`` and a component filter may select it by."""
        params = read_signature(fn, name)
        self.context_params = params.context
        stem = model_stem(fn, name)
        self.arguments = arguments_model(f"{stem}Arguments", params.arguments)
        self.parameters = self.arguments.model_json_schema(by_alias=True)
        self.graph = (ResolverGraph(name, params.resolved, set(params.arguments), resolver_keys or ResolverKeys())
                      if params.resolved else None)
        #: The parameter each validated argument fills, (parameter, field), read on every call.
        self.argument_names = parameter_names(self.arguments)
        #: Whether an argument travels again as an ``Mcp-Param-*`` header, to be checked against it.
        self.header_routed = annotates_headers(self.parameters)
        self.output = output_plan(stem, fn, structured_output)
        self.task = task_support(task)
        #: Whether a call can send the client anything before its answer (a question, a log
        #: message, progress): only through a ``Context``, its function's own, its resolvers' or a task's.
        self.can_send = bool(self.context_params or self.graph or self.task is not None)
        #: Whether a call needs a ``Context`` at all: its function takes one, or its resolvers do.
        self.needs_context = bool(self.context_params or self.graph)
        self._check_channels()

    def _check_channels(self) -> None:
        returns = type_hints(self.fn).get("return")
        if self.graph and returns is not None and any(
            inspect.isclass(arm) and issubclass(arm, InputRequiredResult) for arm in _arms(returns)
        ):
            raise InvalidSignature(
                f"Tool '{self.name}' combines Resolve(...) parameters with an InputRequiredResult return; a call "
                "has one input_required channel, so the multi-round flow is driven either by resolvers or by the "
                "tool body, not both"
            )

    def definition(self) -> ToolDefinition:
        return ToolDefinition(
            name=self.name, title=self.title, description=self.description, input_schema=self.parameters,
            output_schema=self.output.schema if self.output else None, annotations=self.annotations,
            icons=self.icons, _meta=self.meta,
        )

    @overload
    def run(self, arguments: dict[str, Any] | None, ctx: Context | None) -> CallToolResult | InputRequiredResult: ...

    @overload
    def run(self, arguments: dict[str, Any] | None, ctx: Context | None,
            wire: bool) -> CallToolResult | InputRequiredResult | dict[str, Any]: ...

    def run(self, arguments: dict[str, Any] | None, ctx: Context | None,
            wire: bool = False) -> CallToolResult | InputRequiredResult | dict[str, Any]:
        """Call the tool; raises as :meth:`invoke` says, and answers as it does. ``ctx`` may be
        ``None`` only for a tool that needs none (``needs_context``)."""
        return self.invoke(self.prepare(arguments, ctx), ctx, wire)

    def prepare(self, arguments: dict[str, Any] | None, ctx: Context | None) -> dict[str, Any]:
        """The body's parameters: validated arguments and settled resolvers.

        Split from ``invoke`` because a task settles its resolvers on the ``tools/call`` request
        and runs the body later, possibly more than once. Arguments that fail validation raise
        ``ToolError`` with pydantic's reason (the caller's mistake, for the model to correct).
        """
        try:
            validated = self.arguments.model_validate(arguments or {})
        except ValidationError as invalid:
            raise ToolError(f"Error executing tool {self.name}: {invalid}") from invalid
        except MCPError:
            raise
        except Exception as crash:  # a custom validator that breaks is the server's fault
            raise UnexpectedToolError(f"Error executing tool {self.name}") from crash
        values = {name: getattr(validated, field) for name, field in self.argument_names}
        if self.graph:
            if ctx is None:
                raise TypeError(f"tool {self.name!r} settles resolvers: run it with a Context (needs_context)")
            try:
                values.update(self.graph.run(ctx, values))
            except MCPError:
                raise
            except Exception as exc:
                raise self._failure(exc) from exc
        return values

    @overload
    def invoke(self, values: dict[str, Any], ctx: Context | None) -> CallToolResult | InputRequiredResult: ...

    @overload
    def invoke(self, values: dict[str, Any], ctx: Context | None,
               wire: bool) -> CallToolResult | InputRequiredResult | dict[str, Any]: ...

    def invoke(self, values: dict[str, Any], ctx: Context | None,
               wire: bool = False) -> CallToolResult | InputRequiredResult | dict[str, Any]:
        """Run the body with ``values`` (from ``prepare``) and turn what it returns into a result.

        ``wire``: the caller only sends the result (the dispatcher), so a result made of text
        blocks this module built comes in its wire form (``text_result``): no ``CallToolResult``
        is validated only to be dumped back, which was a tenth of an echo call's own cost.

        Raises as the official SDK does: ``ToolError`` carrying the message of a ``ToolError`` or
        ``ResourceError`` raised on purpose, ``UnexpectedToolError`` naming only the tool for
        anything else, a return value that fails the output schema included
        (:func:`failure_result` makes either the client's answer). ``MCPError`` passes through (it
        fails the whole request), and so does the internal ``InputRequired``.
        """
        try:
            if self.context_params:
                values = {**values, **{param: ctx for param in self.context_params}}
            returned = self.fn(**values)
            if isinstance(returned, (CallToolResult, InputRequiredResult)):
                if isinstance(returned, InputRequiredResult) and self.graph:
                    raise RuntimeError(
                        "the tool returned an InputRequiredResult but its parameters use Resolve(...); a call has "
                        "one input_required channel, so the multi-round flow is driven either by resolvers or by "
                        "the tool body, not both"
                    )
                return returned
            structured = self.output.structure(returned) if self.output else None
            content = to_content(returned)
            if wire and (structured is None or type(structured) is dict) and all(
                    type(block) is dict for block in content):
                return text_result(content, structured)
            return CallToolResult(content=content, structured_content=structured)
        except MCPError:
            raise
        except Exception as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: Exception) -> ToolError:
        """What the client may learn of ``exc``: the text of a failure raised on purpose (also by a
        nested tool or resource) or of the client's own unusable answer to a question, else only
        this tool's name (a nested crash's text is generic too)."""
        if isinstance(exc, (UnexpectedToolError, UnexpectedResourceError)):
            return UnexpectedToolError(f"Error executing tool {self.name}: {exc}")
        if isinstance(exc, (ToolError, ResourceError, UnusableAnswer)):
            return ToolError(f"Error executing tool {self.name}: {exc}")
        return UnexpectedToolError(f"Error executing tool {self.name}")
