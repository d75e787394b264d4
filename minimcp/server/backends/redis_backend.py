"""``RedisBackend``: the shared state of a multi-process deployment, on Redis (or Valkey) via redis-py.

Everything is one of redis-py's own primitives: keys with a TTL (sessions, used requestStates), a
list (the sealing key ring), streams (``XADD``/``XREAD``: the events of resumable SSE answers), ``HINCRBY`` (server-to-client request ids), Lua where a check and a
change must be one step (making the key ring once, rotating it), and one pub/sub channel on which
every process hears what concerns sessions (an answer, a cancel, a notification, an end) and the
subscription events. A session's keys share its id as their hash tag, so that on a Redis Cluster
each script and transaction stays in one slot.

One thread per process (the relay) reads that channel; it starts on first use in the process that
uses it (after a fork, anew), and when Redis goes away it reconnects with exponential backoff.
Commands retry a broken connection a few times with backoff (redis-py's ``Retry``); past that a
call raises ``BackendUnavailable``. A refusal no retry passes (credentials, permissions, TLS, a
cluster's node given as one server, a missing command: ``redis_faults``) raises ``BackendMisconfigured`` instead; a server
taking the backend meets it at once (``check``), and a fault found later is logged once, not on
every request.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast
from urllib.parse import parse_qsl, quote, urlencode

from redis.exceptions import ClusterError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError
from redis.sentinel import MasterNotFoundError

from minimcp.server.backends.base import SharedBackend
from minimcp.server.backends.redis_clients import RedisClient, client_from_url, describe, is_cluster, unwatched_service
from minimcp.server.backends.redis_faults import FaultLog, misconfiguration, plain_port_misconfiguration
from minimcp.server.backends.redis_faults import tls_port_misconfiguration
from minimcp.server.backends.redis_task_channel import RedisTaskChannel
from minimcp.server.backends.redis_tasks import RedisTaskStore
from minimcp.server.core.faults import BackendFault, BackendMisconfigured, BackendUnavailable
from minimcp.server.core.ports import SessionListener
from minimcp.shared.subscriptions import ResourceUpdated, ServerEvent, event_from_wire, event_method
from minimcp.types import RequestId

if TYPE_CHECKING:
    from redis.typing import EncodableT, FieldT

logger = logging.getLogger("minimcp.server.backends")

#: The key prefix of a backend no server named and no prefix was given to.
DEFAULT_PREFIX = "minimcp"
#: How long ``listen`` waits for the relay's subscription before the process serves without it.
SUBSCRIBE_TIMEOUT = 5.0
#: The relay's reconnection delays: doubling from the first to the last, in seconds.
BACKOFF_FIRST, BACKOFF_CAP = 0.05, 2.0
#: How many sealing keys the ring keeps: the sealing one and those that still open older states.
KEY_RING = 3
#: How many events one resumable stream keeps (as the in-process log does), and the longest one
#: blocking read waits (below the client's 5 s socket timeout).
MAX_EVENTS = 1024
BLOCK_CAP = 4.0
#: A process is alive while its heartbeat key is: renewed every ``HEARTBEAT_EVERY`` seconds by the
#: relay, gone ``HEARTBEAT_TTL`` seconds after the process stopped beating (killed, or hung). The
#: TTL bounds how long a client waits on a killed process's call (its stream's reader and a task's
#: poller look at the key), and four beats in a row must miss before a live process is taken for dead.
HEARTBEAT_EVERY, HEARTBEAT_TTL = 0.5, 2.0
#: How many questions that ended unanswered a session remembers, to take their late answers.
LATE_KEPT = 64
#: The hex digits of an epoch's two halves: the prefix's tag, and the generation of its data.
EPOCH_HEX = 4

# The name of what the database holds under a prefix now: made once, and anew after the data was lost.
_EPOCH = "local e = redis.call('GET', KEYS[1]) if not e then e = ARGV[1] redis.call('SET', KEYS[1], e) end return e"
# Make the key ring once: whoever comes first pushes its keys, everyone reads the same ring.
_MAKE_RING = "if redis.call('LLEN', KEYS[1]) == 0 then redis.call('RPUSH', KEYS[1], unpack(ARGV)) end " \
             "return redis.call('LRANGE', KEYS[1], 0, -1)"
_ROTATE = "redis.call('LPUSH', KEYS[1], ARGV[1]) redis.call('LTRIM', KEYS[1], 0, tonumber(ARGV[2]) - 1) return 1"
# A question is a field of its session's hash ("q:<id>"), made with its id only while the session
# lives; its answer takes it once. One that ended unanswered moves to the session's short list of
# late ones (the last LATE_KEPT), whose answers are taken and dropped.
_OPEN_QUESTION = "if redis.call('EXISTS', KEYS[1]) == 0 then return false end " \
                 "local id = redis.call('HINCRBY', KEYS[1], 'ids', 1) redis.call('HSET', KEYS[1], 'q:' .. id, 1) return id"
_TAKE_QUESTION = "if redis.call('HDEL', KEYS[1], 'q:' .. ARGV[1]) == 1 then return 'waiting' end " \
                 "if redis.call('LREM', KEYS[2], 1, ARGV[1]) == 1 then return 'ended' end return false"
_END_QUESTION = "if redis.call('HDEL', KEYS[1], 'q:' .. ARGV[1]) == 1 then redis.call('LPUSH', KEYS[2], ARGV[1]) " \
                "redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1) redis.call('PEXPIRE', KEYS[2], ARGV[3]) end return 1"


def _ms(seconds: float) -> int:
    return max(1, int(seconds * 1000))


#: One entry as XRANGE, XREVRANGE and XREAD answer it: its id and its fields (redis-py's types allow
#: ``None`` for both, which only XCLAIM answers, for an entry deleted meanwhile).
_Entry = tuple[bytes | str, dict[Any, Any]]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value


def _event(entry_id: bytes | str, fields: dict[Any, Any]) -> tuple[int, dict[str, Any] | None, bool, dict[str, Any]]:
    """One stored event as ``(seq, message, final, origin)``, read from a client of either decoding:
    bytes names and values by default, text under ``decode_responses=True``."""
    named = {_text(name): _text(value) for name, value in fields.items()}
    raw, origin = named.get("m", ""), named.get("o", "")
    return (int(_text(entry_id).split("-")[1]), json.loads(raw) if raw else None, named.get("f") == "1",
            json.loads(origin) if origin else {})


def _stream_read(found: Any) -> list[_Entry]:
    """The entries of XREAD's answer for one stream, in either protocol a client may speak: RESP2
    (redis-py's default) answers ``[[key, entries]]``, RESP3 ``{key: [entries]}``."""
    if not found:
        return []
    if isinstance(found, dict):
        (listed,) = found.values()
        return list(listed[0])
    return list(found[0][1])


def prefix_for(server_name: str) -> str:
    """The default key prefix of the server ``server_name``: ``minimcp:`` and its name, quoted so
    that no name can spell another's keys (``minimcp:My%20Notes``)."""
    return f"{DEFAULT_PREFIX}:{quote(server_name, safe='')}"


def split_url(url: str) -> tuple[str, str | None]:
    """A Redis URL without its ``prefix`` parameter (which redis-py does not take), and the prefix;
    ``valkey://`` and ``valkeys://`` read as redis-py's own schemes."""
    if url.startswith("valkey"):
        url = "redis" + url[len("valkey"):]
    where, _, query = url.partition("?")
    params = parse_qsl(query, keep_blank_values=True)
    prefixes = [value for name, value in params if name == "prefix"]
    if not prefixes:
        return url, None
    if len(prefixes) > 1 or not prefixes[0]:
        raise ValueError("a Redis URL's prefix parameter names the key prefix once, not empty (?prefix=notes)")
    rest = urlencode([(name, value) for name, value in params if name != "prefix"])
    return f"{where}?{rest}" if rest else where, prefixes[0]


class RedisBackend(SharedBackend):
    """Shared state on Redis: ``RedisBackend("redis://host:6379/0")`` or ``RedisBackend(client)``.

    ``prefix`` starts every key and the channel's name, so several servers may share one database:
    given here or as the URL's ``prefix`` parameter (``redis://host:6379/0?prefix=notes``); else the
    server it is given to names it (``minimcp:`` and the server's name: two differently named servers
    never share state, the processes of one do), and used by no server it is ``minimcp``.
    ``retry_after`` is the ``Retry-After`` (seconds) an HTTP client gets while Redis is unreachable.
    A client passed in is used as it is (its timeouts and retries are yours, and it may decode answers
    to text or speak RESP3): a ``redis.Redis``, a Sentinel's ``master_for(...)`` or a
    ``redis.cluster.RedisCluster``. One made from a URL (``redis_clients``: one server, a Sentinel
    group, a cluster) times out a command after 5 s and retries a broken connection with backoff.
    """

    def __init__(self, client: str | RedisClient, *, prefix: str | None = None, retry_after: int = 1) -> None:
        if isinstance(client, str):
            url, in_url = split_url(client)
            if prefix is not None and in_url is not None and prefix != in_url:
                raise ValueError(f"RedisBackend: prefix={prefix!r} and the URL's ?prefix={in_url} differ; give one")
            prefix = prefix if prefix is not None else in_url
            client = client_from_url(url)
        if prefix == "":
            raise ValueError("RedisBackend: the key prefix must not be empty")
        if prefix is not None and ("{" in prefix or "}" in prefix):
            raise ValueError(f"RedisBackend: the key prefix {prefix!r} must not hold {{ or }}: they mark the part "
                             "of a key a Redis Cluster places by (its hash tag)")
        self.client = client
        self.retry_after = retry_after
        self._make_ring = client.register_script(_MAKE_RING)
        self._rotate = client.register_script(_ROTATE)
        self._open_question = client.register_script(_OPEN_QUESTION)
        self._take_question = client.register_script(_TAKE_QUESTION)
        self._end_question = client.register_script(_END_QUESTION)
        self._epoch = client.register_script(_EPOCH)
        # _lock guards _relay, _session_listeners, _event_listeners, _bus, _process, _tasks, _task_channel,
        # _checked and the naming of _prefix (read without it: set once, before the server's first command).
        self._lock = threading.Lock()
        self._prefix = prefix
        self._named_for: str | None = None
        self._checked = False
        self._faults = FaultLog(self._where())
        self._relay: _Relay | None = None
        self._session_listeners: dict[object, SessionListener] = {}
        self._event_listeners: dict[object, Callable[[ServerEvent], None]] = {}
        self._bus: RedisSubscriptionBus | None = None
        self._process: tuple[int | None, str] = (None, "")  # (pid, name), under _lock
        self._tasks: RedisTaskStore | None = None
        self._task_channel: RedisTaskChannel | None = None

    @property
    def prefix(self) -> str:
        """What every key and the channel's name start with."""
        return self._prefix if self._prefix is not None else DEFAULT_PREFIX

    @property
    def _channel(self) -> str:
        return f"{self.prefix}:bus"

    def named_for(self, server_name: str) -> None:
        """Named, the backend is checked (``check``): a server given a Redis that refuses its
        configuration stops where it is built, naming the cause."""
        with self._lock:
            other = self._named_for
            if self._prefix is None:
                self._prefix, self._named_for = prefix_for(server_name), server_name
                other = None
            checked, self._checked = self._checked, True
        if other is not None and other != server_name:
            logger.warning("one RedisBackend serves the servers %r and %r: they share its keys under %r; give each "
                           "its own backend, or name the prefix (RedisBackend(prefix=...), ?prefix=)",
                           other, server_name, self.prefix)
        if not checked:
            self.check()

    def check(self) -> None:
        """Try once what every process of a server needs of Redis: connecting (credentials, TLS,
        the database), not a cluster, the Lua scripts, a key and the channel under the prefix.

        A refusal no retry passes raises ``BackendMisconfigured``, whose text names the cause and
        the fix. A Redis that does not answer yet is only logged: a server may start before its
        Redis, and answers 503 with ``Retry-After`` until it does.
        """
        scripts = (self._make_ring, self._rotate, self._open_question, self._take_question, self._end_question,
                   self._epoch)
        try:
            self.client.ping()
            if not is_cluster(self.client):
                self._not_a_cluster_node()
            for script in scripts:
                self.client.script_load(script.script)
            self._make_ring(keys=[f"{self.prefix}:rs:keys"], args=[secrets.token_hex(32)])  # as the first seal would
            self.client.publish(self._channel, json.dumps({"k": "check", "s": "", "b": {}}))  # a kind no listener takes
        except (RedisError, OSError) as failed:
            wrong = (misconfiguration(failed, self.client, self._where(), self.prefix)
                     or plain_port_misconfiguration(failed, self.client, self._where())
                     or tls_port_misconfiguration(failed, self.client, self._where())
                     or self._unknown_service(failed))
            if wrong is not None:
                raise wrong from None
            self._faults.once(f"{type(failed).__name__}: {failed}", logging.WARNING,
                              "Redis at %s does not answer (%s); the server starts, and answers 503 with "
                              "Retry-After until it does", self._where(), failed)

    def _not_a_cluster_node(self) -> None:
        """Raise ``ClusterError`` if the one server this client speaks to is a cluster's node: its
        keys would be refused (``MOVED``) wherever another node holds their slot."""
        try:
            self.client.execute_command("CLUSTER", "MYID")
        except RedisError:  # standalone (cluster support disabled), or not ours to ask: nothing learnt
            return
        raise ClusterError("it answers CLUSTER MYID: it runs in cluster mode")

    def _unknown_service(self, failed: BaseException) -> BackendMisconfigured | None:
        """No master found, every Sentinel answered and none watches the service the URL names: no
        wait mends that (a Sentinel that does not answer leaves it open)."""
        service = unwatched_service(self.client) if isinstance(failed, MasterNotFoundError) else None
        if service is None:
            return None
        return BackendMisconfigured(
            "Sentinel knows no such service",
            f"the Sentinels of {self._where()} watch no master named {service!r}: give the name their "
            "configuration monitors (sentinel monitor <name> ...) in the URL's path")

    def __repr__(self) -> str:
        return f"RedisBackend({self._where()!r}, prefix={self.prefix!r})"

    def _where(self) -> str:
        return describe(self.client)

    @contextlib.contextmanager
    def _reaching(self) -> Iterator[None]:
        """Every command runs in here: a failure becomes one clear error (``_fault``). The relay
        runs again if this process closed it and still has listeners (a server served anew)."""
        if self._relay is None and (self._session_listeners or self._event_listeners):
            self._relay_started()
        try:
            yield
        except (RedisError, OSError) as failed:
            raise self._fault(failed) from None
        if self._faults.pending:
            self._faults.answered()

    def _fault(self, failed: RedisError | OSError) -> BackendFault:
        """What ``failed`` is for the server, logged once until Redis answers again: a
        misconfiguration (a 500 naming it), else an unavailability (a 503 worth a retry)."""
        wrong = misconfiguration(failed, self.client, self._where(), self.prefix)
        if wrong is not None:
            self._faults.once(wrong.detail, logging.ERROR, "%s", wrong.detail)
            return wrong
        if isinstance(failed, (RedisConnectionError, RedisTimeoutError, OSError)):
            self._faults.once(f"{type(failed).__name__}: {failed}", logging.WARNING, "Redis at %s is unreachable: %s",
                              self._where(), failed)
        else:
            self._faults.once(f"{type(failed).__name__}: {failed}", logging.ERROR, "Redis at %s refused a command: %s",
                              self._where(), failed)
        return BackendUnavailable(f"Redis at {self._where()}", self.retry_after)

    # --- requestState -------------------------------------------------------------------------
    def request_state_keys(self, seed: Sequence[bytes] = ()) -> list[bytes]:
        offered = [key.hex() for key in seed] or [secrets.token_hex(32)]
        with self._reaching():
            ring = self._make_ring(keys=[f"{self.prefix}:rs:keys"], args=offered)
        return [bytes.fromhex(_text(key)) for key in ring]

    def rotate_request_state_keys(self) -> None:
        with self._reaching():
            self._rotate(keys=[f"{self.prefix}:rs:keys"], args=[secrets.token_hex(32), KEY_RING])
        self.send("keys", "", {})

    def spend_request_state(self, digest: str, ttl: float) -> bool:
        with self._reaching():
            return bool(self.client.set(f"{self.prefix}:rs:used:{digest}", 1, nx=True, px=_ms(ttl)))

    def subscription_bus(self) -> RedisSubscriptionBus:
        with self._lock:
            if self._bus is None:
                self._bus = RedisSubscriptionBus(self)
            return self._bus

    # --- tasks: the Redis task store and channel, under this backend's prefix ---------------------
    def task_store(self) -> RedisTaskStore:
        with self._lock:
            if self._tasks is None:
                self._tasks = RedisTaskStore(self.client, prefix=f"{self.prefix}:tasks")
            return self._tasks

    def task_channel(self) -> RedisTaskChannel:
        with self._lock:
            if self._task_channel is None:
                self._task_channel = RedisTaskChannel(self.client, prefix=f"{self.prefix}:tasks",
                                                      heartbeat=HEARTBEAT_TTL)
            return self._task_channel

    # --- sessions -----------------------------------------------------------------------------
    # A session's keys carry its id as their hash tag ({...}): a Redis Cluster keeps them in one slot,
    # so a script or transaction touching several of them runs there, and the sessions spread over slots.
    def _session_key(self, session_id: str) -> str:
        return f"{self.prefix}:s:{{{session_id}}}"

    def store_epoch(self) -> str:
        """The prefix's own tag and the generation of its data (``EPOCH_HEX`` digits each): the tag
        tells the sessions of this server from another's on the same database."""
        made = self._epoch_tag() + secrets.token_hex(EPOCH_HEX // 2)
        with self._reaching():
            return _text(self._epoch(keys=[f"{self.prefix}:epoch"], args=[made]))

    def epoch_lost(self, epoch: str) -> bool:
        """An epoch of this prefix (its tag) that is not the one the database holds now."""
        return len(epoch) == 2 * EPOCH_HEX and epoch.startswith(self._epoch_tag()) and epoch != self.store_epoch()

    def _epoch_tag(self) -> str:
        return hashlib.sha256(self.prefix.encode()).hexdigest()[:EPOCH_HEX]

    def save_session(self, session_id: str, record: dict[str, Any], ttl: float) -> None:
        key = self._session_key(session_id)
        with self._reaching():
            pipe = self.client.pipeline(transaction=True)
            pipe.hset(key, "r", json.dumps(record, separators=(",", ":")))
            pipe.pexpire(key, _ms(ttl))
            pipe.execute()

    def load_session(self, session_id: str, ttl: float) -> dict[str, Any] | None:
        key = self._session_key(session_id)
        with self._reaching():
            pipe = self.client.pipeline(transaction=False)
            pipe.hget(key, "r")
            pipe.pexpire(key, _ms(ttl))
            raw, _ = pipe.execute()
        return None if raw is None else json.loads(raw)

    def renew_session(self, session_id: str, ttl: float) -> bool:
        with self._reaching():
            return bool(self.client.pexpire(self._session_key(session_id), _ms(ttl)))

    def session_alive(self, session_id: str) -> bool:
        with self._reaching():
            return bool(self.client.exists(self._session_key(session_id)))

    def delete_session(self, session_id: str) -> bool:
        with self._reaching():
            existed = bool(self.client.delete(self._session_key(session_id), self._late_key(session_id)))
        self.send("closed", session_id, {})
        return existed

    # --- questions: fields of the session's hash, late ones a short list beside it ----------------
    def _late_key(self, session_id: str) -> str:
        return f"{self.prefix}:late:{{{session_id}}}"

    def open_question(self, session_id: str) -> int | None:
        with self._reaching():
            opened = self._open_question(keys=[self._session_key(session_id)])
        return None if opened is None else int(opened)

    def take_question(self, session_id: str, request_id: RequestId) -> Literal["waiting", "ended"] | None:
        with self._reaching():
            taken = self._take_question(keys=[self._session_key(session_id), self._late_key(session_id)],
                                        args=[json.dumps(request_id)])
        if taken is None:
            return None
        return "waiting" if _text(taken) == "waiting" else "ended"

    def end_question(self, session_id: str, request_id: RequestId, ttl: float) -> None:
        with self._reaching():
            self._end_question(keys=[self._session_key(session_id), self._late_key(session_id)],
                               args=[json.dumps(request_id), LATE_KEPT, _ms(ttl)])

    # --- resumable streams: one Redis stream per SSE answer, entry ids ``0-<seq>`` -------------
    def _events_key(self, session_id: str, stream_id: str) -> str:
        return f"{self.prefix}:ev:{{{session_id}}}:{stream_id}"

    def append_event(self, session_id: str, stream_id: str, seq: int, message: dict[str, Any] | None,
                     final: bool, origin: dict[str, Any], ttl: float) -> None:
        key = self._events_key(session_id, stream_id)
        fields: dict[FieldT, EncodableT] = {
            "m": "" if message is None else json.dumps(message, separators=(",", ":")), "f": int(final),
            "o": json.dumps(origin, separators=(",", ":"))}
        with self._reaching():
            pipe = self.client.pipeline(transaction=False)
            pipe.xadd(key, fields, id=f"0-{seq}", maxlen=MAX_EVENTS, approximate=True)
            pipe.pexpire(key, _ms(ttl))
            pipe.execute()

    def read_events(self, session_id: str, stream_id: str, after: int,
                    timeout: float) -> list[tuple[int, dict[str, Any] | None, bool]]:
        key = self._events_key(session_id, stream_id)
        with self._reaching():
            entries = cast("list[_Entry]", self.client.xrange(key, min=f"(0-{after}", count=MAX_EVENTS))
            if not entries and timeout > 0:
                block = _ms(min(timeout, BLOCK_CAP))
                entries = _stream_read(self.client.xread({key: f"0-{after}"}, count=MAX_EVENTS, block=block))
        return [(seq, message, final) for seq, message, final, _ in (_event(*entry) for entry in entries)]

    def last_event(self, session_id: str, stream_id: str) -> tuple[int, dict[str, Any]] | None:
        with self._reaching():
            newest = cast("list[_Entry]", self.client.xrevrange(self._events_key(session_id, stream_id), count=1))
        if not newest:
            return None
        seq, _, _, origin = _event(*newest[0])
        return seq, origin

    def process_id(self) -> str:
        with self._lock:
            if self._process[0] != os.getpid():  # a forked worker is a process of its own
                self._process = (os.getpid(), secrets.token_hex(8))
            return self._process[1]

    def process_alive(self, process_id: str) -> bool:
        with self._reaching():
            return bool(self.client.exists(f"{self.prefix}:alive:{process_id}"))

    def _beat(self) -> None:
        """The relay's heartbeat: this process is alive for ``HEARTBEAT_TTL`` more seconds."""
        self.client.set(f"{self.prefix}:alive:{self.process_id()}", 1, px=_ms(HEARTBEAT_TTL))

    # --- the channel --------------------------------------------------------------------------
    def send(self, kind: str, session_id: str, body: dict[str, Any]) -> None:
        with self._reaching():
            self.client.publish(self._channel, json.dumps({"k": kind, "s": session_id, "b": body},
                                                          separators=(",", ":")))

    def _answer_key(self, session_id: str, request_id: Any) -> str:
        return f"{self.prefix}:ans:{{{session_id}}}:{json.dumps(request_id)}"

    def keep_answer(self, session_id: str, message: dict[str, Any], ttl: float) -> None:
        with self._reaching():
            self.client.set(self._answer_key(session_id, message.get("id")), json.dumps(message), px=_ms(ttl))

    def kept_answers(self, session_id: str, request_ids: list[Any]) -> list[dict[str, Any]]:
        if not request_ids:
            return []
        keys = [self._answer_key(session_id, request_id) for request_id in request_ids]
        with self._reaching():
            pipe = self.client.pipeline(transaction=True)
            pipe.mget(keys)
            pipe.delete(*keys)
            found, _ = pipe.execute()
        return [json.loads(raw) for raw in found if raw is not None]

    def listen(self, listener: SessionListener) -> Callable[[], None]:
        return self._add(self._session_listeners, listener)

    def _listen_events(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        return self._add(self._event_listeners, listener)

    def _add(self, listeners: dict[object, Any], listener: Any) -> Callable[[], None]:
        token = object()
        with self._lock:
            listeners[token] = listener
        self._relay_started()

        def stop() -> None:
            with self._lock:
                listeners.pop(token, None)

        return stop

    def _relay_started(self) -> None:
        """This process's relay, started (and subscribed, within ``SUBSCRIBE_TIMEOUT``) on first use."""
        with self._lock:
            relay = self._relay
            if relay is not None and relay.pid == os.getpid():
                return
            relay = self._relay = _Relay(self)  # threads do not survive a fork: a new one here
            relay.start()
        if not relay.subscribed.wait(SUBSCRIBE_TIMEOUT):
            logger.warning("the Redis channel %s is not subscribed yet; it keeps trying", self._channel)

    def _deliver(self, raw: bytes) -> None:
        """One message from the channel, to this process's listeners (on the relay's thread)."""
        try:
            message = json.loads(raw)
            kind, session_id, body = message["k"], message["s"], message["b"]
        except (ValueError, KeyError, TypeError):
            logger.warning("ignored a malformed message on %s", self._channel)
            return
        with self._lock:
            if kind == "event":
                listeners: list[Any] = list(self._event_listeners.values())
            else:
                listeners = list(self._session_listeners.values())
        if kind == "event":
            event = event_from_wire(body.get("m", ""), body)
            if event is None:
                return
            for listener in listeners:
                _safely(listener, event)
            return
        for listener in listeners:
            _safely(listener, kind, session_id, body)

    def close(self) -> None:
        """Stop this process's relay and withdraw its heartbeat, so that a reader of a stream this
        process sent hears at once that nothing more comes; a later command starts the relay (and
        the heartbeat) again while listeners remain."""
        with self._lock:
            relay, self._relay = self._relay, None
        if relay is not None:
            relay.stop()
            if relay.pid == os.getpid():
                with contextlib.suppress(RedisError, OSError):  # unreachable: the key expires on its own
                    self.client.delete(f"{self.prefix}:alive:{self.process_id()}")


def _safely(listener: Callable[..., None], *args: Any) -> None:
    try:
        listener(*args)
    except Exception:  # fan-out boundary: one broken listener must not silence the others
        logger.exception("a listener of the Redis channel raised")


class _Relay(threading.Thread):
    """Reads the backend's channel for this process; reconnects with backoff while Redis is away."""

    def __init__(self, backend: RedisBackend) -> None:
        super().__init__(name="minimcp-redis-relay", daemon=True)
        self.backend = backend
        self.pid = os.getpid()
        self.subscribed = threading.Event()
        self._stopping = threading.Event()

    def stop(self) -> None:
        self._stopping.set()

    def run(self) -> None:
        delay = BACKOFF_FIRST
        while not self._stopping.is_set():
            pubsub = self.backend.client.pubsub(ignore_subscribe_messages=True)
            try:
                pubsub.subscribe(self.backend._channel)
                if self.subscribed.is_set():  # back after a loss: what was sent meanwhile is missed
                    self.backend._deliver(json.dumps({"k": "resync", "s": "", "b": {}}).encode())
                self.subscribed.set()
                delay = BACKOFF_FIRST
                beaten = 0.0
                while not self._stopping.is_set():
                    if time.monotonic() - beaten >= HEARTBEAT_EVERY:
                        self.backend._beat()
                        beaten = time.monotonic()
                    message = pubsub.get_message(timeout=min(1.0, HEARTBEAT_EVERY))
                    if message is not None and message.get("type") == "message":
                        self.backend._deliver(message["data"])
            except (RedisError, OSError) as down:
                self.backend._fault(down)  # logged once; the channel reconnects after a wait all the same
                self._stopping.wait(delay)
                delay = min(delay * 2, BACKOFF_CAP)
            except Exception:
                # Once stopped, the client a caller gave may be closed under a read in progress
                # (redis-py then fails inside its parser): the relay was ending anyway.
                if self._stopping.is_set():
                    return
                raise
            finally:
                with contextlib.suppress(RedisError, OSError):
                    pubsub.close()


class RedisSubscriptionBus:
    """A ``SubscriptionBus`` across processes: ``publish`` goes to Redis, each process's relay
    hands what arrives to its own listeners, the publishing process's included (so once each)."""

    def __init__(self, backend: RedisBackend) -> None:
        self.backend = backend

    def publish(self, event: ServerEvent) -> None:
        body: dict[str, Any] = {"m": event_method(event)}
        if isinstance(event, ResourceUpdated):
            body["uri"] = event.uri
        self.backend.send("event", "", body)

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        return self.backend._listen_events(listener)
