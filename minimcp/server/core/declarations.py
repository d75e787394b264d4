"""What a client declared about itself: its capabilities and who it is (``clientInfo``).

A legacy client declares them once, in ``initialize``; a 2026-07-28 request carries them in its
``_meta``, where most handlers never read them: such a declaration is kept as the raw values its
envelope held (already proven to validate) and made models only when first read.
"""

from __future__ import annotations

from typing import Any

from minimcp.server.core.workers import Lock
from minimcp.types import ClientCapabilities, Implementation, dump

__all__ = ["ClientDeclarations", "covers"]


def covers(declared: Any, required: Any) -> bool:
    """Whether a declared capability object includes everything ``required`` names."""
    if not isinstance(required, dict):
        return declared is not None
    if not isinstance(declared, dict):
        return False
    return all(key in declared and covers(declared[key], value) for key, value in required.items())


class ClientDeclarations:
    """One client's capabilities and identity, as models, or raw until first read.

    ``raw``: a 2026-07-28 envelope's ``clientCapabilities`` and ``clientInfo`` (the latter ignored
    unless an object), taken as they came: the caller has proven that they validate (an identical
    pair already did), and most handlers never read them, so each becomes a model of its own only
    when first read."""

    def __init__(self, capabilities: ClientCapabilities | None = None, info: Implementation | None = None,
                 raw: tuple[Any, Any] | None = None) -> None:
        # _lock guards the settling of _raw into _capabilities and _info (see ``_settle``).
        self._lock = Lock()
        self._capabilities = capabilities
        self._info = info
        self._raw = raw

    def _settle(self) -> None:
        """Make the declared raw values models (or give the empty capabilities when nothing was declared)."""
        with self._lock:
            if self._raw is not None:
                capabilities, info = self._raw
                self._capabilities = ClientCapabilities.model_validate(capabilities)
                self._info = Implementation.model_validate(info) if isinstance(info, dict) else None
                self._raw = None
            elif self._capabilities is None:
                self._capabilities = ClientCapabilities()

    @property
    def capabilities(self) -> ClientCapabilities:
        """What the client said it can do (nothing, until it said)."""
        if self._raw is not None or self._capabilities is None:
            self._settle()
        return self._capabilities  # type: ignore[return-value]

    @capabilities.setter
    def capabilities(self, capabilities: ClientCapabilities) -> None:
        if self._raw is not None:
            self._settle()
        self._capabilities = capabilities

    @property
    def info(self) -> Implementation | None:
        """Who the client said it is; ``None`` until it named itself."""
        if self._raw is not None:
            self._settle()
        return self._info

    @info.setter
    def info(self, info: Implementation | None) -> None:
        if self._raw is not None:
            self._settle()
        self._info = info

    def wire_capabilities(self) -> dict[str, Any]:
        """The client's capabilities in wire form: a 2026-07-28 envelope's raw declaration while it
        is one (proven valid, and asked about by a question's gate far more often than made a model),
        else the model's."""
        raw = self._raw  # read once: another thread may settle it meanwhile
        if raw is not None:
            return raw[0]
        return dump(self.capabilities)

    def covers(self, required: Any) -> bool:
        """Whether the client declared everything ``required`` (a wire-shaped capability object) names."""
        return covers(self.wire_capabilities(), required)

    def capability(self, name: str) -> Any:
        """One capability the client declared, in wire form (``None``: not declared)."""
        return self.wire_capabilities().get(name)
