"""What a Redis error means for a server: a wait, or a configuration that no wait mends.

Some refusals last as long as the deployment is configured as it is: credentials Redis refuses
(``WRONGPASS``, ``NOAUTH``), an ACL user without a command, key or channel the server needs
(``NOPERM``), a TLS connection that cannot be made (a CA file missing, a certificate refused, a
port that speaks no TLS, or TLS only), a Redis Cluster's node given as one server (``MOVED``,
``ASK``, ``CLUSTERDOWN``, ``CROSSSLOT``), a command the server lacks. ``misconfiguration`` names each, with
what to change; every other error (a refused connection, a timeout, ``LOADING``, ``READONLY``
during a failover, ``BUSY``, ``OOM``) is worth a retry.

``FaultLog`` logs each distinct fault once until Redis answers again: a busy server meets the same
fault on every request, and one line says it as well as a thousand.
"""

from __future__ import annotations

import logging
import socket
import ssl
import threading
from collections.abc import Iterator

import redis
from redis.exceptions import (
    AskError,
    AuthenticationError,
    AuthenticationWrongNumberOfArgsError,
    AuthorizationError,
    ClusterCrossSlotError,
    ClusterError,
    ModuleError,
    NoPermissionError,
    ResponseError,
    TryAgainError,
)

from minimcp.server.backends.redis_clients import RedisClient, connection_options, is_cluster, speaks_tls
from minimcp.server.core.faults import BackendMisconfigured

logger = logging.getLogger("minimcp.server.backends")

_AUTHENTICATION = (AuthenticationError, AuthenticationWrongNumberOfArgsError)
_PERMISSION = (NoPermissionError, AuthorizationError)
_CLUSTER = (AskError, ClusterError, ClusterCrossSlotError, TryAgainError)
#: The connection options naming the files a TLS connection reads.
_TLS_FILES = ("ssl_ca_certs", "ssl_ca_path", "ssl_certfile", "ssl_keyfile")


def _chain(error: BaseException) -> Iterator[BaseException]:
    """``error`` and what it was raised from or during (redis-py wraps the socket's own errors)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        yield current
        current = current.__cause__ or current.__context__


def misconfiguration(error: BaseException, client: RedisClient, where: str, prefix: str) -> BackendMisconfigured | None:
    """The fault ``error`` is when no retry can pass it, naming the cause and the fix; ``None``
    when it is worth a retry. ``where`` names the server (``redis://host:6379/0``), ``prefix`` the
    keys and channels the server uses. A cluster client meets a cluster's errors when slots move or
    a master fails over: those are worth a retry."""
    said = f"{type(error).__name__}: {error}"
    if isinstance(error, _AUTHENTICATION):
        return BackendMisconfigured(
            "its credentials were refused",
            f"Redis at {where} refused the server's credentials ({said}): give the right password, and the ACL "
            "user if there is one, in the backend URL (redis://user:password@host:6379/0)")
    if isinstance(error, _PERMISSION):
        return BackendMisconfigured(
            "a command, key or channel is not permitted",
            f"Redis at {where} does not permit the server's ACL user what it needs ({said}): grant it the keys "
            f"and channels under the prefix ({prefix}:* with ~{prefix}:* &{prefix}:*) and the commands "
            "+@read +@write +@scripting +@pubsub +@transaction +@connection")
    if isinstance(error, _CLUSTER) and not is_cluster(client):
        return BackendMisconfigured(
            "it is a Redis Cluster",
            f"Redis at {where} is a node of a Redis Cluster ({said}): give the backend the cluster's URL "
            "(redis+cluster://host:port[,host:port]), or the URL of a standalone server")
    if isinstance(error, ModuleError) or (isinstance(error, ResponseError) and "unknown command" in str(error).lower()):
        return BackendMisconfigured(
            "a command the server needs is missing",
            f"Redis at {where} lacks a command the server needs ({said}): RedisBackend needs Redis 5 or later "
            "(or Valkey) with Lua scripting and streams")
    for link in _chain(error):
        if isinstance(link, ssl.SSLError):
            return BackendMisconfigured("TLS failed", f"TLS with Redis at {where} failed ({link}): {_tls_fix(link)}")
        if isinstance(link, (FileNotFoundError, PermissionError, IsADirectoryError)) and speaks_tls(client):
            options = connection_options(client)
            files = ", ".join(f"{name}={options[name]}" for name in _TLS_FILES if options.get(name)) or "its files"
            return BackendMisconfigured(
                "TLS failed",
                f"TLS with Redis at {where} cannot start: {files} cannot be read ({link.strerror or link}); give "
                "the path of a readable file")
    return None


def _tls_fix(failed: ssl.SSLError) -> str:
    """What to change for the TLS failure ``failed``, by the reason OpenSSL gives."""
    reason = failed.reason or ""
    if "CERTIFICATE_REQUIRED" in reason:
        return ("Redis asks for a client certificate: give its file and its key's (ssl_certfile= and ssl_keyfile=), "
                "signed by a CA Redis trusts (its tls-ca-cert-file)")
    if "CERTIFICATE_VERIFY_FAILED" in reason:
        return ("Redis's certificate was not signed by the CA given, or its host name or dates do not fit: give the "
                "CA that signed it (ssl_ca_certs=)")
    if reason.endswith(("BAD_CERTIFICATE", "UNKNOWN_CA", "CERTIFICATE_UNKNOWN", "CERTIFICATE_EXPIRED")):
        return ("Redis refused the client certificate (ssl_certfile=): give one signed by a CA Redis trusts (its "
                "tls-ca-cert-file), within its dates")
    return ("check the CA that signed Redis's certificate (ssl_ca_certs=), the certificate's host name and dates, "
            "the client certificate Redis asks for (ssl_certfile= and ssl_keyfile=), and that the port serves TLS")


def plain_port_misconfiguration(error: BaseException, client: RedisClient, where: str,
                                timeout: float = 1.0) -> BackendMisconfigured | None:
    """At start-up, a TLS connection that timed out or was cut: if the port answers plain Redis,
    the URL asks TLS of a port that has none (a Redis that is only slow is left to retry)."""
    options = connection_options(client)
    if (not speaks_tls(client) or "host" not in options
            or not isinstance(error, (redis.ConnectionError, redis.TimeoutError))):
        return None
    try:
        with socket.create_connection((options["host"], options.get("port", 6379)), timeout) as plain:
            plain.sendall(b"PING\r\n")
            first = plain.recv(1)
    except OSError:
        return None
    if first not in (b"+", b"-"):
        return None
    return BackendMisconfigured(
        "TLS failed",
        f"Redis at {where} speaks plain Redis, not TLS, on that port: use redis:// for it, or rediss:// with the "
        "port Redis serves TLS on (its tls-port)")


def tls_port_misconfiguration(error: BaseException, client: RedisClient, where: str,
                              timeout: float = 1.0) -> BackendMisconfigured | None:
    """At start-up, a plain connection that was cut: if the port completes a TLS handshake, the URL
    asks plain Redis of a port that serves TLS only (its certificate is not checked: only whether
    the port speaks TLS at all)."""
    options = connection_options(client)
    if speaks_tls(client) or "host" not in options or not isinstance(error, redis.ConnectionError):
        return None
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection((options["host"], options.get("port", 6379)), timeout) as raw:
            raw.settimeout(timeout)
            with context.wrap_socket(raw):
                pass
    except OSError:
        return None
    return BackendMisconfigured(
        "TLS failed",
        f"Redis at {where} serves TLS on that port: use rediss:// for it, with ssl_ca_certs= (and ssl_certfile= and "
        "ssl_keyfile= when Redis asks for a client certificate)")


class FaultLog:
    """The faults logged since Redis last answered, each once; ``answered`` says it is back."""

    def __init__(self, where: str) -> None:
        self.where = where
        # _lock guards _seen (the faults logged since Redis last answered).
        self._lock = threading.Lock()
        self._seen: set[str] = set()

    @property
    def pending(self) -> bool:
        """Whether a fault was logged since Redis last answered (read without the lock: a stale
        answer only delays ``answered`` by one command)."""
        return bool(self._seen)

    def once(self, key: str, level: int, message: str, *args: object) -> None:
        """Log ``message`` unless the fault ``key`` was logged since Redis last answered."""
        with self._lock:
            if key in self._seen:
                return
            self._seen.add(key)
        logger.log(level, message, *args)

    def answered(self) -> None:
        """Redis answered: the faults logged are over, and the next ones are logged again."""
        with self._lock:
            had, self._seen = bool(self._seen), set()
        if had:
            logger.warning("Redis at %s answers again", self.where)
