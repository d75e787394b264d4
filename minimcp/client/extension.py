"""Client extensions (SEP-2133): what a client declares under ``capabilities.extensions``.

    with Client(server, extensions=[advertise("com.example/catalog")]) as client:
        ...

A server gates an extension's methods on that declaration (``require_client_extension``), so a
client that speaks one says so here. ``advertise(identifier, settings)`` declares support and
nothing else; subclass ``ClientExtension`` when the settings are computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from minimcp.shared.extension import validate_extension_identifier


class ClientExtension:
    """Base class of a client extension: set ``identifier``, override ``settings`` if it has any."""

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


def declared_extensions(extensions: Sequence[ClientExtension] | None) -> dict[str, dict[str, Any]]:
    """``Client(extensions=[...])`` as the ``capabilities.extensions`` map it declares."""
    if isinstance(extensions, Mapping):
        raise TypeError("extensions= takes a sequence of ClientExtension instances; "
                        "declare an identifier with advertise(identifier, settings)")
    declared: dict[str, dict[str, Any]] = {}
    for extension in extensions or ():
        identifier = getattr(extension, "identifier", None)
        validate_extension_identifier(identifier, owner=type(extension).__name__)
        if identifier in declared:
            raise ValueError(f"extension identifier {identifier!r} is passed more than once")
        declared[identifier] = extension.settings()
    return declared


__all__ = ["ClientExtension", "advertise"]
