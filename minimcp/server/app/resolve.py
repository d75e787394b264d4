"""Resolvers: parameters the framework fills by running a function before the tool body.

``Annotated[T, Resolve(fn)]`` on a parameter makes ``fn`` run first; ``fn`` returns the value, or a
question (``Elicit``, ``Sample``, ``ListRoots``) for the framework to ask. A resolver's own
parameters are the request's ``Context``, other resolvers, or the tool's validated arguments by
name. The graph is checked once, at registration, and run in dependency order on every call, each
resolver at most once.

How a question travels is not this file's business: it asks through the request's ``Questions``
strategy. On a 2026-07-28 request an unanswered question raises ``InputRequired``; the runner
catches it per resolver, keeps visiting the independent ones, and re-raises one merged
``InputRequired`` at the end, so every question the pass can see goes out in one round.
"""

from __future__ import annotations

import inspect
import types
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Annotated, Any, Callable, Generic, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel


from minimcp.server.app.context import Context, elicitation_gate, missing_capability
from minimcp.server.app.elicitation import (
    AcceptedElicitation,
    CancelledElicitation,
    DeclinedElicitation,
    ElicitationResult,
    form_schema,
    outcome_of,
)
from minimcp.server.app.exceptions import InvalidSignature, ToolError
from minimcp.server.core.rounds import InputRequired
from minimcp.server.app.signature import Resolve, is_context, resolve_marker, type_hints
from minimcp.types import (
    CreateMessageResult,
    CreateMessageResultWithTools,
    ListRootsResult,
    ModelPreferences,
    SamplingMessage,
    dump,
)

if TYPE_CHECKING:
    from minimcp.server.core.sessions import Connection

T = TypeVar("T", bound=BaseModel)


class Elicit(Generic[T]):
    """Returned by a resolver: ask the user to fill ``schema``; the answer fills the parameter."""

    def __init__(self, message: str, schema: type[T]) -> None:
        self.message = message
        self.schema = schema


class Sample:
    """Returned by a resolver: ask the client's model for a completion (``CreateMessageResult``)."""

    def __init__(
        self,
        messages: list[SamplingMessage],
        *,
        max_tokens: int,
        system_prompt: str | None = None,
        include_context: str | None = None,
        temperature: float | None = None,
        stop_sequences: list[str] | None = None,
        metadata: dict[str, Any] | None = None,
        model_preferences: ModelPreferences | None = None,
        tools: list[Any] | None = None,
        tool_choice: Any = None,
    ) -> None:
        self.messages = messages
        self.max_tokens = max_tokens
        self.system_prompt = system_prompt
        self.include_context = include_context
        self.temperature = temperature
        self.stop_sequences = stop_sequences
        self.metadata = metadata
        self.model_preferences = model_preferences
        self.tools = tools
        self.tool_choice = tool_choice

    @property
    def uses_tools(self) -> bool:
        return self.tools is not None or self.tool_choice is not None

    def params(self) -> dict[str, Any]:
        wire = {
            "messages": [dump(m) if isinstance(m, BaseModel) else m for m in self.messages],
            "maxTokens": self.max_tokens,
            "systemPrompt": self.system_prompt,
            "includeContext": self.include_context,
            "temperature": self.temperature,
            "stopSequences": self.stop_sequences,
            "metadata": self.metadata,
            "modelPreferences": dump(self.model_preferences) if self.model_preferences else None,
            "tools": [dump(t) if isinstance(t, BaseModel) else t for t in self.tools] if self.tools else None,
            "toolChoice": dump(self.tool_choice) if isinstance(self.tool_choice, BaseModel) else self.tool_choice,
        }
        return {key: value for key, value in wire.items() if value is not None}


class ListRoots:
    """Returned by a resolver: ask the client for its roots (``ListRootsResult``)."""


_QUESTIONS = (Elicit, Sample, ListRoots)
_OUTCOMES = (AcceptedElicitation, DeclinedElicitation, CancelledElicitation)


def _arms(annotation: Any) -> list[Any]:
    if get_origin(annotation) is Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (Union, types.UnionType):
        return [arm for part in get_args(annotation) for arm in _arms(part)]
    return [annotation]


def _is_question_type(arm: Any) -> bool:
    base = get_origin(arm) or arm
    return inspect.isclass(base) and issubclass(base, _QUESTIONS)


def wants_outcome(annotation: Any) -> bool:
    """Whether a parameter takes the whole elicitation outcome rather than the bare model."""
    for arm in _arms(annotation):
        if get_origin(arm) is ElicitationResult or arm is ElicitationResult:
            return True
        base = get_origin(arm) or arm
        if inspect.isclass(base) and issubclass(base, _OUTCOMES):
            return True
    return False


def deliver(param: str, annotation: Any, outcome: Any) -> Any:
    """Shape a resolver's outcome for the parameter that receives it."""
    if wants_outcome(annotation):
        return outcome if isinstance(outcome, _OUTCOMES) else AcceptedElicitation(data=outcome)
    if isinstance(outcome, AcceptedElicitation):
        return outcome.data
    if isinstance(outcome, (DeclinedElicitation, CancelledElicitation)):
        raise ToolError(f"Resolver for parameter '{param}' could not resolve: elicitation was {outcome.action}")
    return outcome


@dataclass(eq=False)
class Resolver:
    """One node of the graph; ``inputs`` lists (parameter, source) with source a ``Resolver``,
    ``"context"`` or ``("argument", name)``."""

    fn: Callable[..., Any]
    name: str
    key: str
    inputs: list[tuple[str, Any, Any]] = field(default_factory=list)  # (param, annotation, source)


class ResolverKeys:
    """Wire keys ``"<module>:<qualname>"``, unique per server: distinct functions that share a
    name (closures from one factory) get ``#1``, ``#2``..."""

    def __init__(self) -> None:
        self._owners: dict[str, list[Any]] = {}

    def key_for(self, fn: Callable[..., Any]) -> str:
        base = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"
        owners = self._owners.setdefault(base, [])
        identity = _identity(fn)
        if identity not in owners:
            owners.append(identity)
        index = owners.index(identity)
        return base if index == 0 else f"{base}#{index}"


def _identity(fn: Callable[..., Any]) -> tuple[Any, int]:
    return getattr(fn, "__func__", fn), id(getattr(fn, "__self__", None))


class ResolverGraph:
    """The resolvers of one tool, in dependency order."""

    def __init__(self, owner: str, params: dict[str, tuple[Any, Resolve]], argument_names: set[str],
                 keys: ResolverKeys) -> None:
        self._argument_names = argument_names
        self._keys = keys
        self._nodes: dict[tuple[Any, int], Resolver] = {}
        self.order: list[Resolver] = []
        self.params = {name: (annotation, self._visit(marker.fn, ())) for name, (annotation, marker) in params.items()}

    def __bool__(self) -> bool:
        return bool(self.params)

    def _visit(self, fn: Callable[..., Any], path: tuple[Any, ...]) -> Resolver:
        identity = _identity(fn)
        name = getattr(fn, "__name__", repr(fn))
        if identity in path:
            raise InvalidSignature(f"Resolver '{name}' has a cyclic dependency")
        if identity in self._nodes:
            return self._nodes[identity]
        _check_return(fn, name)
        node = Resolver(fn=fn, name=name, key=self._keys.key_for(fn))
        hints = type_hints(fn)
        for param in inspect.signature(fn).parameters.values():
            annotation = hints.get(param.name, Any)
            marker = resolve_marker(annotation)
            if is_context(annotation):
                node.inputs.append((param.name, annotation, "context"))
            elif marker is not None:
                node.inputs.append((param.name, annotation, self._visit(marker.fn, (*path, identity))))
            elif param.name in self._argument_names:
                node.inputs.append((param.name, annotation, ("argument", param.name)))
            else:
                raise InvalidSignature(
                    f"Resolver '{name}' parameter '{param.name}' cannot be resolved: expected a Context, "
                    "an Annotated[_, Resolve(...)], or a tool argument by name"
                )
        self._nodes[identity] = node
        self.order.append(node)
        return node

    def run(self, ctx: Context, arguments: dict[str, Any]) -> dict[str, Any]:
        """Every resolved parameter's value; raises ``InputRequired`` with all questions still open."""
        outcomes: dict[Resolver, Any] = {}
        deferred: dict[str, dict[str, Any]] = {}
        for node in self.order:
            sources = [source for _, _, source in node.inputs if isinstance(source, Resolver)]
            if any(source not in outcomes for source in sources):
                continue  # waits on an unanswered question upstream
            kwargs = {}
            for param, annotation, source in node.inputs:
                if source == "context":
                    kwargs[param] = ctx
                elif isinstance(source, Resolver):
                    kwargs[param] = deliver(param, annotation, outcomes[source])
                else:
                    kwargs[param] = arguments[source[1]]
            try:
                outcomes[node] = _settle(node, node.fn(**kwargs), ctx)
            except InputRequired as pending:
                deferred.update(pending.requests)
        if deferred:
            raise InputRequired(deferred)
        return {param: deliver(param, annotation, outcomes[node]) for param, (annotation, node) in self.params.items()}


def _check_return(fn: Callable[..., Any], name: str) -> None:
    returns = type_hints(fn).get("return")
    if returns is not None and sum(_is_question_type(arm) for arm in _arms(returns)) > 1:
        raise InvalidSignature(
            f"Resolver '{name}' return annotation has multiple Elicit/Sample/ListRoots arms; a resolver asks "
            "one question - split it into separate resolvers"
        )


def _settle(node: Resolver, value: Any, ctx: Context) -> Any:
    """Ask the question a resolver returned, or pass its plain value through."""
    if not isinstance(value, _QUESTIONS):
        return value
    connection = ctx.session.connection
    ctx.questions.ready("elicitation/create" if isinstance(value, Elicit) else (
        "sampling/createMessage" if isinstance(value, Sample) else "roots/list"))
    if isinstance(value, Elicit):
        return _elicit(node, value, ctx)
    if isinstance(value, Sample):
        required: dict[str, Any] = {"sampling": {"tools": {}} if value.uses_tools else {}}
        what = "sampling.tools" if value.uses_tools else "sampling"
        answer = ctx.questions.ask(node.key, "sampling/createMessage", value.params(),
                                  lambda: _require(connection, what, required, node.key))
        model = CreateMessageResultWithTools if value.uses_tools else CreateMessageResult
        return model.model_validate(answer)
    answer = ctx.questions.ask(node.key, "roots/list", {},
                              lambda: _require(connection, "roots", {"roots": {}}, node.key))
    return ListRootsResult.model_validate(answer)


def _require(connection: Connection, what: str, required: dict[str, Any], asker: str) -> None:
    if not connection.declares(required):
        raise missing_capability(what, required, asker)


def _elicit(node: Resolver, question: Elicit[BaseModel], ctx: Context) -> Any:
    connection = ctx.session.connection
    schema = connection.era.resolver_schema(form_schema(question.schema))
    params = {"mode": "form", "message": question.message, "requestedSchema": schema}
    answer = ctx.questions.ask(node.key, "elicitation/create", params,
                              lambda: elicitation_gate(connection, "form", node.key))
    try:
        return outcome_of(answer, question.schema)
    except ValueError as exc:
        connection.era.bad_answer(exc, node.key)

