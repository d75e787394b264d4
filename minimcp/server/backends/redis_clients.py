"""The redis-py client a Redis URL names, and what any client is connected to, whatever its kind.

A URL names one server, a group Sentinel watches, or a Redis Cluster:

- ``redis://[user:password@]host:6379/0``, ``rediss://`` (TLS), ``unix:///path/redis.sock``,
  ``valkey://`` and ``valkeys://``: redis-py's own forms, its query parameters included
  (``?ssl_ca_certs=...&ssl_certfile=...&ssl_keyfile=...`` for a client certificate);
- ``redis+sentinel://[user:password@]host:26379[,host2:26379]/service_name[/db]`` (``sentinel://``
  too): the master Sentinel names ``service_name``, found anew after a failover. The credentials are
  the master's; ``?sentinel_password=`` (and ``sentinel_username=``) are the Sentinels' own, when
  they ask for one. ``rediss+sentinel://`` speaks TLS to both, with the same ``ssl_*`` parameters;
- ``redis+cluster://[user:password@]host:6379[,host2:6379]`` (``rediss+cluster://`` for TLS): a
  Redis Cluster, found from any of the nodes given (database 0, the only one a cluster has).

The query parameters of redis-py's URLs work in every form; ``prefix`` is minimcp's own (the key
prefix), taken off before the rest reach redis-py.
"""

from __future__ import annotations

from typing import Any, Union
from urllib.parse import parse_qsl, unquote, urlencode

import redis
from redis.backoff import ExponentialBackoff
from redis.cluster import ClusterNode, RedisCluster
from redis.connection import SSLConnection, parse_url
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.retry import Retry
from redis.sentinel import Sentinel, SentinelConnectionPool

from minimcp.server.core.faults import BackendUnavailable

#: A client ``RedisBackend`` takes: one server's (a Sentinel's master's too) or a cluster's.
RedisClient = Union[redis.Redis, RedisCluster]

#: The URL schemes of a Sentinel group and of a cluster (``rediss``: TLS); any other is redis-py's own.
SENTINEL_SCHEMES = ("redis+sentinel", "rediss+sentinel", "sentinel")
CLUSTER_SCHEMES = ("redis+cluster", "rediss+cluster")

#: The Sentinels' own credentials, taken off a Sentinel URL's query.
_SENTINEL_AUTH = {"sentinel_password": "password", "sentinel_username": "username"}
#: The reconnection delays of a client made from a URL: doubling from the first to the last, in seconds.
_BACKOFF_FIRST, _BACKOFF_CAP = 0.05, 2.0


def _retry() -> Retry:
    return Retry(ExponentialBackoff(cap=_BACKOFF_CAP, base=_BACKOFF_FIRST), 3)


#: What a client made from a URL is given unless the URL says otherwise: a command times out after
#: 5 s, a connection after 2 s.
#: The connections a client made from a URL may open to Redis (to each node of a cluster): one per
#: thread running a command at once, which is a request thread's or a call worker's (redis-py's own
#: default, 100, fails a command at once with "Too many connections" when more run together).
MAX_CONNECTIONS = 1024
#: What every client made from a URL is given: a command times out after 5 s, a connection after 2 s.
_TIMEOUTS: dict[str, Any] = {"socket_timeout": 5.0, "socket_connect_timeout": 2.0, "max_connections": MAX_CONNECTIONS}


def client_from_url(url: str) -> RedisClient:
    """The client ``url`` (without ``prefix``) names: it times out a command after 5 s and retries a
    broken connection with backoff. A cluster is asked for its slots here: it must answer
    (``BackendUnavailable`` otherwise), where a single server may come up after the server."""
    scheme = url.partition("://")[0].lower()
    if scheme in SENTINEL_SCHEMES:
        return _sentinel_master(url, scheme)
    if scheme in CLUSTER_SCHEMES:
        return _cluster(url, scheme)
    return redis.Redis.from_url(url, **_TIMEOUTS, health_check_interval=30, retry=_retry(),
                                retry_on_error=[RedisConnectionError, RedisTimeoutError])


def _parts(url: str, default_port: int) -> tuple[list[tuple[str, int]], str, str, str]:
    """``(hosts, credentials, path, query)`` of a URL naming several ``host:port``s."""
    rest = url.partition("://")[2]
    where, _, query = rest.partition("?")
    netloc, slash, path = where.partition("/")
    credentials, _, hostlist = netloc.rpartition("@")
    hosts = []
    for entry in filter(None, hostlist.split(",")):
        host, colon, port = entry.rpartition(":")
        if not colon or host.endswith(":"):  # no port given (an IPv6 address has its own colons, in brackets)
            host, port = entry, str(default_port)
        if not port.isdigit():
            raise ValueError(f"{entry!r} in {url!r} is no host:port")
        hosts.append((unquote(host.strip("[]")), int(port)))
    if not hosts:
        raise ValueError(f"{url!r} names no host: give host:port[,host:port]")
    return hosts, credentials, slash + path, query


def _options(tls: bool, credentials: str, db: str, query: str) -> dict[str, Any]:
    """redis-py's connection options of a URL's credentials, database and query, as it reads them
    for one server (the host given to it is a placeholder, taken off again)."""
    userinfo = f"{credentials}@" if credentials else ""
    options = parse_url(f"{'rediss' if tls else 'redis'}://{userinfo}placeholder/{db}?{query}")
    options.pop("host", None)
    options.pop("port", None)
    if options.pop("connection_class", None) is SSLConnection:
        options["ssl"] = True
    return {**_TIMEOUTS, **options}


def _sentinel_master(url: str, scheme: str) -> redis.Redis:
    hosts, credentials, path, query = _parts(url, 26379)
    service, _, db = path.strip("/").partition("/")
    if not service or (db and not db.isdigit()):
        raise ValueError(f"{url!r}: give the service's name, and its database after it "
                         "(redis+sentinel://host:26379/mymaster/0)")
    own = dict(parse_qsl(query, keep_blank_values=True))
    sentinel_auth = {_SENTINEL_AUTH[name]: own.pop(name) for name in list(own) if name in _SENTINEL_AUTH}
    options = _options(scheme.startswith("rediss"), credentials, db or "0", urlencode(own))
    # The Sentinels are reached with the master's timeouts and TLS, their own credentials (none unless given).
    sentinel_options = {name: value for name, value in options.items()
                        if name.startswith(("socket_", "ssl"))}
    sentinels = Sentinel(hosts, sentinel_kwargs={**sentinel_options, **sentinel_auth}, **options)
    return sentinels.master_for(unquote(service), retry=_retry(),
                                retry_on_error=[RedisConnectionError, RedisTimeoutError])


def _cluster(url: str, scheme: str) -> RedisCluster:
    hosts, credentials, path, query = _parts(url, 6379)
    if path.strip("/") not in ("", "0"):
        raise ValueError(f"{url!r}: a Redis Cluster has database 0 only; leave the path out")
    options = _options(scheme.startswith("rediss"), credentials, "0", query)
    options.pop("db", None)
    try:
        return RedisCluster(startup_nodes=[ClusterNode(host, port) for host, port in hosts], retry=_retry(),
                            **options)
    except RedisError as down:
        raise BackendUnavailable(f"the Redis Cluster at {url.partition('@')[2] or url} (it must answer when the "
                                 f"server starts, to tell its slots: {down})") from down


def unwatched_service(client: RedisClient) -> str | None:
    """The service a Sentinel client's URL names when every Sentinel answers and none watches it
    (no wait mends that); ``None`` for any other client, or when a Sentinel does not answer."""
    pool = getattr(client, "connection_pool", None)
    if not isinstance(pool, SentinelConnectionPool):
        return None
    for sentinel in pool.sentinel_manager.sentinels:
        try:
            if pool.service_name in sentinel.sentinel_masters():
                return None
        except RedisError:
            return None
    return str(pool.service_name)


def is_cluster(client: RedisClient) -> bool:
    return isinstance(client, RedisCluster)


def connection_options(client: RedisClient) -> dict[str, Any]:
    """The options the client's connections are made with (host, port, TLS files, timeouts)."""
    if isinstance(client, RedisCluster):
        return dict(client.nodes_manager.connection_kwargs)
    return dict(client.connection_pool.connection_kwargs)


def speaks_tls(client: RedisClient) -> bool:
    """Whether the client's connections are TLS ones (``rediss://``, or ``ssl=True``)."""
    if isinstance(client, RedisCluster):
        options = connection_options(client)
        return bool(options.get("ssl")) or issubclass(options.get("connection_class", object), SSLConnection)
    return issubclass(client.connection_pool.connection_class, SSLConnection)


def describe(client: RedisClient) -> str:
    """Where the client is connected, as a URL without credentials (``redis://host:6379/0``)."""
    tls = "s" if speaks_tls(client) else ""
    if isinstance(client, RedisCluster):
        nodes = ",".join(f"{node.host}:{node.port}" for node in client.nodes_manager.startup_nodes.values())
        return f"redis{tls}+cluster://{nodes}"
    kwargs = client.connection_pool.connection_kwargs
    pool = client.connection_pool
    if isinstance(pool, SentinelConnectionPool):
        sentinels = ",".join(
            f"{watcher.connection_pool.connection_kwargs.get('host', '?')}:"
            f"{watcher.connection_pool.connection_kwargs.get('port', '?')}" for watcher in pool.sentinel_manager.sentinels)
        return f"redis{tls}+sentinel://{sentinels}/{pool.service_name}/{kwargs.get('db', 0)}"
    if "path" in kwargs:
        return f"unix://{kwargs['path']}"
    return f"redis{tls}://{kwargs.get('host', '?')}:{kwargs.get('port', '?')}/{kwargs.get('db', 0)}"
