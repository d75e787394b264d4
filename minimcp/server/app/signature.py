"""Reading a handler's signature: which parameters the client fills, which the framework injects.

Tools, resolvers, prompts and resource templates all follow one rule, applied once at
registration: a parameter annotated ``Context`` receives the request's context, one annotated
``Annotated[T, Resolve(fn)]`` receives a resolver's outcome (the ``Resolve`` marker is here; the
resolvers run in ``minimcp.server.app.resolve``), and every other parameter is an argument the
client sends, validated by a pydantic model built from the annotations.
"""

from __future__ import annotations

import functools

import inspect
import types
import typing
from dataclasses import dataclass, field
from typing import Annotated, Any, Callable, Union, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, create_model

from minimcp.server.app.context import Context
from minimcp.server.app.exceptions import InvalidSignature


class Resolve:
    """Marks a parameter as filled by ``fn``: ``Annotated[T, Resolve(fn)]``."""

    __slots__ = ("fn",)

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    def __repr__(self) -> str:
        return f"Resolve({getattr(self.fn, '__qualname__', self.fn)!r})"


def require_sync(fn: Callable[..., Any], name: str) -> None:
    """minimcp has one execution model; refuse coroutine functions where they are registered."""
    target: Any = fn if inspect.isroutine(fn) else getattr(fn, "__call__", fn)
    if inspect.iscoroutinefunction(target) or inspect.isasyncgenfunction(target):
        raise TypeError(
            f"minimcp runs plain functions only: '{name}' is declared 'async def'; delete async/await when porting"
        )


def type_hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target = fn if inspect.isroutine(fn) else type(fn).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception:  # unresolvable forward references: fall back to the raw annotations
        return dict(getattr(target, "__annotations__", {}))


def is_context(annotation: Any) -> bool:
    """``Context``, ``Context[T]``, a subclass, or ``Annotated[Context, ...]``."""
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    annotation = get_origin(annotation) or annotation
    return inspect.isclass(annotation) and issubclass(annotation, Context)


def resolve_marker(annotation: Any) -> Any:
    """The ``Resolve`` in ``Annotated[T, Resolve(fn)]``, else ``None``."""
    if get_origin(annotation) is Annotated:
        for extra in annotation.__metadata__:
            if isinstance(extra, Resolve):
                return extra
    return None


def buried_resolve(annotation: Any) -> bool:
    """Whether a ``Resolve`` hides inside a union, where it would silently never run."""
    if get_origin(annotation) in (Union, types.UnionType):
        return any(resolve_marker(arm) is not None or buried_resolve(arm) for arm in get_args(annotation))
    return False


@dataclass
class Parameters:
    """A handler's parameters sorted by who fills them."""

    context: list[str] = field(default_factory=list)
    resolved: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # name -> (annotation, Resolve)
    arguments: dict[str, tuple[Any, Any]] = field(default_factory=dict)  # name -> (annotation, default)


def read_signature(fn: Callable[..., Any], owner: str) -> Parameters:
    """Sort ``fn``'s parameters; raises ``InvalidSignature`` for shapes that cannot work."""
    hints = type_hints(fn)
    result = Parameters()
    for param in inspect.signature(fn).parameters.values():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise InvalidSignature(f"Parameter '{param.name}' of '{owner}' is variadic; name each argument")
        annotation = hints.get(param.name, Any if param.annotation is param.empty else param.annotation)
        if is_context(annotation):
            result.context.append(param.name)
            continue
        if buried_resolve(annotation):
            raise InvalidSignature(
                f"Parameter '{param.name}' of '{owner}' wraps `Resolve(...)` in a union; annotate the "
                "parameter directly as `Annotated[T, Resolve(...)]`"
            )
        marker = resolve_marker(annotation)
        if marker is not None:
            result.resolved[param.name] = (annotation, marker)
            continue
        if param.name.startswith("_"):
            raise InvalidSignature(f"Parameter '{param.name}' of '{owner}' cannot start with '_'")
        default = ... if param.default is param.empty else param.default
        result.arguments[param.name] = (annotation, default)
    return result


def model_stem(fn: Callable[..., Any], name: str) -> str:
    """What the models built from ``fn`` are named after (``{stem}Arguments``, ``{stem}Output``): the
    function's own name, whatever it is registered as, as the official SDK names them (a schema's
    ``title`` and a validation error both show it); ``name`` for a callable that has none."""
    return getattr(fn, "__name__", None) or name


def arguments_model(model_name: str, arguments: dict[str, tuple[Any, Any]]) -> type[BaseModel]:
    """A pydantic model of the client-supplied arguments; its JSON Schema is the input schema.

    A parameter whose name shadows a ``BaseModel`` attribute (``schema``, ``json``...) is stored
    under another field name with the parameter's name as alias, so the wire never notices.
    """
    fields: dict[str, Any] = {}
    for name, (annotation, default) in arguments.items():
        if hasattr(BaseModel, name):
            fields[f"field_{name}"] = (Annotated[annotation, Field(alias=name)], default)
        else:
            fields[name] = (annotation, default)
    return create_model(
        model_name, __config__=ConfigDict(arbitrary_types_allowed=True, populate_by_name=True), **fields
    )


def argument_values(model: BaseModel) -> dict[str, Any]:
    """The validated arguments by parameter name, as instances (not dumped dicts)."""
    return {name: getattr(model, field_name) for name, field_name in parameter_names(type(model))}


@functools.lru_cache(maxsize=1024)
def parameter_names(model: type[BaseModel]) -> tuple[tuple[str, str], ...]:
    """(parameter name, field name) of an arguments model: read on every call, so kept per model
    (pydantic's ``model_fields`` costs more than the rest of the lookup)."""
    return tuple((info.alias or field_name, field_name) for field_name, info in model.model_fields.items())
