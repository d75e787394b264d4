"""What the session knows of result claims (SEP-2133): which ``resultType`` each owns, the model
that parses it, and where it is active; the ``resolve`` that finishes a claimed shape is the
``Client``'s business (``minimcp.client.extension.ResultClaim``).

The session parses a claimed answer and returns it to a caller that asked for claimed shapes
(``allow_claimed=True``), or refuses it with ``UnexpectedClaimedResult``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

from minimcp.types import Result


class ClaimedShape(Protocol):
    """The part of a ``ResultClaim`` the session reads."""

    @property
    def result_type(self) -> str: ...

    @property
    def model(self) -> type[Result]: ...

    def active_at(self, version: str | None) -> bool: ...


class UnexpectedClaimedResult(RuntimeError):
    """A claimed result reached a ``session.call_tool`` that did not ask for one
    (``allow_claimed=True``); ``result`` is the parsed shape, which may name state the server keeps."""

    def __init__(self, result: Result) -> None:
        super().__init__(
            f"Server returned a claimed result ({type(result).__name__}); call through Client.call_tool "
            "to have its extension resolve it, or pass allow_claimed=True and handle the shape yourself. "
            "The result (on .result) may reference server-side state that needs cleaning up."
        )
        self.result = result


def index_claims(result_claims: Mapping[str, Sequence[ClaimedShape]] | None,
                 extensions: Mapping[str, Any]) -> dict[str, tuple[ClaimedShape, ...]]:
    """``ClientSession(result_claims=...)`` checked: each key a declared extension (a claim is
    announced through its extension's declaration), none empty, no ``resultType`` twice."""
    indexed: dict[str, tuple[ClaimedShape, ...]] = {}
    seen: set[str] = set()
    for identifier, claims in (result_claims or {}).items():
        if identifier not in extensions:
            raise ValueError(f"result_claims key {identifier!r} is not in extensions; a claim is "
                             "announced through its extension's declaration, so declare it there too")
        if not claims:
            raise ValueError(f"result_claims[{identifier!r}] is empty, which would keep the extension "
                             "from ever being declared; leave the key out instead")
        for claim in claims:
            if claim.result_type in seen:
                raise ValueError(f"duplicate result claim for resultType {claim.result_type!r}")
            seen.add(claim.result_type)
        indexed[identifier] = tuple(claims)
    return indexed
