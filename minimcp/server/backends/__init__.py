"""Where a server keeps what outlives one request: ``backend=`` on ``MCPServer``, ``Server``, Flask and Django.

``backend=None`` (the default) is ``MemoryBackend()``: everything in this process, as always (the
core's own implementation of its ports, ``minimcp.server.core.in_process``).
``backend="redis://host:6379/0"`` (or ``RedisBackend(client)``, with ``pip install 'minimcp-sync[redis]'``)
shares it between processes, so any process of ``gunicorn -w 4`` or of several machines behind a
load balancer serves any request of any session. A Redis watched by Sentinel is
``redis+sentinel://host:26379[,host:26379]/mymaster[/0]``, a Redis Cluster
``redis+cluster://host:6379[,host:6379]`` (``minimcp.server.backends.redis_clients``). Its keys start with a prefix: the URL's ``prefix``
parameter (``redis://host:6379/0?prefix=notes``), else ``minimcp:`` and the server's name, so two
differently named servers on one database never share state.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

from minimcp.server.backends.base import Backend, SharedBackend
from minimcp.server.core.faults import BackendMisconfigured, BackendUnavailable
from minimcp.server.core.in_process import MemoryBackend
from minimcp.server.core.ports import SessionListener, Stores

if TYPE_CHECKING:
    from minimcp.server.backends.redis_backend import RedisBackend

BackendSpec = Union[Backend, Stores, str, None]

#: The URL schemes ``backend=`` takes as text: redis-py's own, a Sentinel group's and a cluster's
#: (``minimcp.server.backends.redis_clients``; spelt out here so that naming none needs no redis-py).
REDIS_SCHEMES = ("redis://", "rediss://", "unix://", "valkey://", "valkeys://", "redis+sentinel://",
                 "rediss+sentinel://", "sentinel://", "redis+cluster://", "rediss+cluster://")


def resolve_backend(spec: BackendSpec, server_name: str | None = None) -> Stores:
    """The backend ``backend=`` names: an object as it is, a Redis URL as a ``RedisBackend``, ``None``
    as a fresh ``MemoryBackend``; named for the server ``server_name`` (its default key prefix)."""
    backend = _backend_of(spec)
    if server_name is not None:
        backend.named_for(server_name)
    return backend


def _backend_of(spec: BackendSpec) -> Stores:
    if spec is None:
        return MemoryBackend()
    if isinstance(spec, Backend):
        return spec
    if isinstance(spec, str):
        if spec.startswith(REDIS_SCHEMES):
            from minimcp.server.backends.redis_backend import RedisBackend

            return RedisBackend(spec)
        if spec in ("memory", "memory://"):
            return MemoryBackend()
        raise ValueError(f"backend={spec!r}: give a Redis URL (redis://host:6379/0, unix:///path/redis.sock, "
                         "redis+sentinel://host:26379/mymaster, redis+cluster://host:6379), 'memory', or a Backend object")
    raise TypeError(f"backend= takes a URL or a minimcp.server.backends.Backend, not {type(spec).__name__}")


def __getattr__(name: str) -> Any:
    """``RedisBackend``, imported on first use: redis-py is an optional dependency (``minimcp-sync[redis]``)."""
    if name in ("RedisBackend", "RedisSubscriptionBus"):
        from minimcp.server.backends import redis_backend

        return getattr(redis_backend, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Backend", "BackendMisconfigured", "BackendSpec", "BackendUnavailable", "MemoryBackend", "RedisBackend",
           "SessionListener", "SharedBackend", "resolve_backend"]
