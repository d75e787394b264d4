"""Roots: the directories and files a client offers a server, ``roots/list`` and its change
notification."""

from __future__ import annotations

import sys
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field

from minimcp.types.base import MCPModel, Meta, NotificationParams, Result


def _url_to_str(value: Any) -> Any:
    # A pydantic URL exists only once pydantic.networks is imported, which this module leaves to
    # whoever makes one: importing it costs a tenth of ``import minimcp.types``.
    networks = sys.modules.get("pydantic.networks")
    return str(value) if networks is not None and isinstance(value, networks.AnyUrl) else value


class Root(MCPModel):
    # A str (not FileUrl) so the URI round-trips unnormalized; pydantic URL objects are accepted.
    uri: Annotated[str, BeforeValidator(_url_to_str)]
    name: str | None = None
    meta: Meta | None = Field(default=None, alias="_meta")


class ListRootsRequest(MCPModel):
    method: Literal["roots/list"] = "roots/list"
    params: dict[str, Any] | None = None


class ListRootsResult(Result):
    roots: list[Root]


class RootsListChangedNotification(MCPModel):
    method: Literal["notifications/roots/list_changed"] = "notifications/roots/list_changed"
    params: NotificationParams | None = None
