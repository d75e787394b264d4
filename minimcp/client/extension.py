"""Client extensions (SEP-2133): what a client declares under ``capabilities.extensions``, the
vendor notifications it listens to, and the extra ``tools/call`` result shapes it claims.

    with Client(server, extensions=[advertise("com.example/catalog")]) as client:
        ...

A server gates an extension's methods on that declaration (``require_client_extension``), so a
client that speaks one says so here. ``advertise(identifier, settings)`` declares support and
nothing else; subclass ``ClientExtension`` when the settings are computed, when the extension
observes notifications of its own (``notifications()`` -> ``NotificationBinding``), or when it
finishes a result shape of its own (``claims()`` -> ``ResultClaim``): on a 2026-07-28 connection a
``tools/call`` answer whose ``resultType`` a claim owns is validated as the claim's model and its
``resolve`` turns it into the ``CallToolResult`` that ``Client.call_tool`` returns.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, get_args

from pydantic import AliasChoices, AliasPath

from minimcp.client.bindings import NotificationBinding
from minimcp.client.claims import UnexpectedClaimedResult
from minimcp.client.era import MODERN, client_era
from minimcp.client.session import ClientSession
from minimcp.shared.extension import validate_extension_identifier
from minimcp.types import (
    CORE_RESULT_TYPES,
    CallToolResult,
    InputRequiredResult,
    Result,
)

ClaimedT = TypeVar("ClaimedT", bound=Result)

#: The methods a claim may attach to (the ``method`` Literal of ``ResultClaim`` names the same).
CLAIM_METHODS = frozenset({"tools/call"})

#: Wire keys of the core ``input_required`` round: refused on a claimed shape, as officially, so
#: that they mean one thing on every answer.
RESERVED_RESULT_KEYS = frozenset({"requestState", "inputRequests"})


@dataclass(frozen=True, kw_only=True)
class ClaimContext:
    """What a claim's ``resolve`` gets beside the claimed result: the session to send follow-ups
    on, the tool that was called and the read timeout the call was given."""

    session: ClientSession
    tool_name: str
    read_timeout_seconds: float | None


@dataclass(frozen=True, kw_only=True)
class ResultClaim(Generic[ClaimedT]):
    """An extra result shape of ``method``, keyed by its wire ``resultType``: validated as
    ``model`` and finished by ``resolve(result, ctx)``, a plain function that runs on the calling
    thread and returns the ordinary ``CallToolResult``. Active on 2026-07-28 connections only
    (``protocol_versions`` narrows that further); every rule is checked here, when it is built."""

    result_type: str
    model: type[ClaimedT]
    resolve: Callable[[ClaimedT, ClaimContext], CallToolResult]
    method: Literal["tools/call"] = "tools/call"
    protocol_versions: frozenset[str] | None = None

    def __post_init__(self) -> None:
        if self.method not in CLAIM_METHODS:
            raise ValueError(f"a result claim attaches to {sorted(CLAIM_METHODS)} only, not {self.method!r}")
        if self.result_type in CORE_RESULT_TYPES:
            raise ValueError(f"resultType {self.result_type!r} belongs to the core protocol; "
                             "claim a resultType of your extension's own")
        model = self.model
        if not (isinstance(model, type) and issubclass(model, Result)):
            raise ValueError(f"{getattr(model, '__name__', model)!r} must subclass minimcp.types.Result")
        model.model_rebuild()  # an annotation left as a string (a name not yet defined) fails here, saying which
        if issubclass(model, (CallToolResult, InputRequiredResult)):
            raise ValueError(f"{model.__name__} subclasses a core result; a claimed shape is a Result of its own")
        for name, field in model.model_fields.items():
            clash = sorted(_wire_keys(name, field) & RESERVED_RESULT_KEYS)
            if clash:
                raise ValueError(f"{model.__name__}.{name} reads the wire key {clash[0]!r}, which the core "
                                 "input_required round owns; give the field another name or alias")
        result_type_field = model.model_fields.get("result_type")
        if result_type_field is None or get_args(result_type_field.annotation) != (self.result_type,):
            raise ValueError(f"{model.__name__}.result_type must be Literal[{self.result_type!r}], "
                             "so that the shape carries the resultType it is claimed by")
        if self.protocol_versions is not None:
            if not self.protocol_versions:
                raise ValueError("protocol_versions is empty, so the claim could never be active; "
                                 "use None for every 2026-07-28-era version")
            foreign = sorted(self.protocol_versions.difference(MODERN.versions))
            if foreign:
                raise ValueError(f"protocol_versions {foreign} are not 2026-07-28-era versions: a legacy "
                                 f"connection carries no claimed shapes (speakable: {list(MODERN.versions)})")

    def active_at(self, version: str | None) -> bool:
        """Whether a connection speaking ``version`` delivers this shape: its era carries claims
        (never a legacy one) and ``protocol_versions`` lets it."""
        return client_era(version).carries_claims and (
            self.protocol_versions is None or version in self.protocol_versions)


def _wire_keys(name: str, field: Any) -> set[str]:
    """The top-level wire keys a model field is read from or written to."""
    keys = {field.alias or name}
    if field.serialization_alias:
        keys.add(field.serialization_alias)
    validation = field.validation_alias
    for choice in validation.choices if isinstance(validation, AliasChoices) else [validation]:
        key = choice.path[0] if isinstance(choice, AliasPath) else choice
        if isinstance(key, str):
            keys.add(key)
    return keys


class ClientExtension:
    """Base class of a client extension: set ``identifier``, override what it contributes."""

    #: The reverse-DNS identifier (``vendor-prefix/name``), the key under ``capabilities.extensions``.
    identifier: str

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        identifier = cls.__dict__.get("identifier")
        if identifier is not None:  # one assigned per instance is checked when a Client takes it
            validate_extension_identifier(identifier, owner=cls.__name__)

    def settings(self) -> dict[str, Any]:
        """What is declared at ``capabilities.extensions[identifier]``, read once by ``Client``."""
        return {}

    def claims(self) -> Sequence[ResultClaim[Any]]:
        """The extra ``tools/call`` result shapes this extension finishes. An extension that claims
        any is declared only where at least one of its claims is active (2026-07-28)."""
        return ()

    def notifications(self) -> Sequence[NotificationBinding[Any]]:
        """The server notifications this extension observes."""
        return ()


class _Advertised(ClientExtension):
    def __init__(self, identifier: str, settings: dict[str, Any]) -> None:
        self.identifier = identifier
        self._settings = settings

    def settings(self) -> dict[str, Any]:
        return self._settings


def advertise(identifier: str, settings: dict[str, Any] | None = None) -> ClientExtension:
    """Declare support for ``identifier`` (with its ``settings``) and nothing more: declare only
    what your code really speaks, since the server will rely on it."""
    validate_extension_identifier(identifier, owner="advertise")
    return _Advertised(identifier, {} if settings is None else settings)


@dataclass(frozen=True)
class FoldedExtensions:
    """``Client(extensions=[...])`` as the session takes it."""

    #: ``capabilities.extensions``: identifier -> settings.
    declared: dict[str, dict[str, Any]]
    #: Identifier -> the result claims of that extension (only extensions that claim any).
    claims: dict[str, tuple[ResultClaim[Any], ...]]
    bindings: list[NotificationBinding[Any]]


def _owned_twice(owner: str, identifier: str, verb: str) -> str:
    return f"extension {owner!r} {verb}s" if owner == identifier else f"extensions {owner!r} and {identifier!r} both {verb}"


def fold_extensions(extensions: Sequence[ClientExtension] | None) -> FoldedExtensions:
    """Read each extension's contributions once, refusing a ``resultType`` or a notification
    method that two of them (or one, twice) would own, and naming who."""
    if isinstance(extensions, Mapping):
        raise TypeError("extensions= takes a sequence of ClientExtension instances; "
                        "declare an identifier with advertise(identifier, settings)")
    folded = FoldedExtensions({}, {}, [])
    claim_owners: dict[str, str] = {}
    binding_owners: dict[str, str] = {}
    for extension in extensions or ():
        identifier = validate_extension_identifier(getattr(extension, "identifier", None),
                                                   owner=type(extension).__name__)
        if identifier in folded.declared:
            raise ValueError(f"extension identifier {identifier!r} is passed more than once")
        folded.declared[identifier] = extension.settings()
        claims = tuple(extension.claims())
        for claim in claims:
            owner = claim_owners.get(claim.result_type)
            if owner is not None:
                raise ValueError(f"{_owned_twice(owner, identifier, 'claim')} resultType {claim.result_type!r}; "
                                 "a resultType can have only one resolver")
            claim_owners[claim.result_type] = identifier
        if claims:
            folded.claims[identifier] = claims
        for binding in extension.notifications():
            owner = binding_owners.get(binding.method)
            if owner is not None:
                raise ValueError(f"{_owned_twice(owner, identifier, 'bind')} notification method {binding.method!r}; "
                                 "a method can have only one observer")
            binding_owners[binding.method] = identifier
            folded.bindings.append(binding)
    return folded


__all__ = [
    "ClaimContext",
    "ClientExtension",
    "NotificationBinding",
    "ResultClaim",
    "UnexpectedClaimedResult",
    "advertise",
]
