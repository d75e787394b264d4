"""``Headers``: HTTP header fields by case-insensitive name, as both sides read them.

The server's adapters make one per request for the exchange, the client's own HTTP reader one per
answer; either way every lookup after that is a dict's. Names are kept in lower case, and
iterated so, as ASGI's and ``http.client``'s are.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar, overload

_Default = TypeVar("_Default")


class Headers(dict[str, str]):
    """Header fields by case-insensitive name."""

    def __init__(self, fields: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        super().__init__()
        for name, value in (fields.items() if isinstance(fields, Mapping) else fields):
            self[name] = value

    @classmethod
    def lowered(cls, fields: dict[str, str]) -> Headers:
        """Headers from fields already named in lower case, taken as they are."""
        headers = dict.__new__(cls)  # empty; __init__ would only walk an empty field list
        dict.update(headers, fields)
        return headers

    # dict's own methods named directly rather than through super(): each is called several times
    # per request, and super() costs as much as the lookup.
    def __setitem__(self, name: str, value: str) -> None:
        dict.__setitem__(self, name.lower(), value)

    def __getitem__(self, name: str) -> str:
        return dict.__getitem__(self, name.lower())

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and dict.__contains__(self, name.lower())

    @overload  # type: ignore[override]  # a name only, where dict.get takes any key
    def get(self, name: str) -> str | None: ...

    @overload
    def get(self, name: str, default: str) -> str: ...

    @overload
    def get(self, name: str, default: _Default) -> str | _Default: ...

    def get(self, name: str, default: Any = None) -> Any:
        return dict.get(self, name.lower(), default)


__all__ = ["Headers"]
