"""``RedisTaskChannel``: the ``TaskChannel`` of processes sharing one Redis, over its pub/sub.

Each process, on first use, subscribes to ``<prefix>:{<tag>}:status`` (every status change, heard
by all) and ``<prefix>:{<tag>}:to:<process id>`` (cancellations and resumptions of the bodies it
holds), and keeps ``<prefix>:{<tag>}:alive:<process id>`` set with a time to live of ``heartbeat`` seconds, refreshed three
times per period. A reader that finds that key gone fails the tasks of that process: a killed
process's tasks are reported failed within ``heartbeat`` seconds (plus one poll).

One thread per process (``minimcp-task-channel``) reads the subscription, refreshes the heartbeat
and calls the manager's ``tick``. When Redis goes away it reconnects with a doubling backoff
(bounded by ``max_backoff``); the ``tick`` after reconnecting catches up with what was missed,
because pub/sub keeps nothing for an absent listener. A forked child (``gunicorn --preload``)
starts its own thread and takes a process id of its own on first use.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import threading
import time
from typing import Any, Callable

from minimcp.server.backends.redis_clients import RedisClient
from minimcp.server.backends.redis_tasks import key_in_slot, warn_if_unbounded
from minimcp.server.core.faults import TaskStoreUnavailable
from minimcp.server.core.ports import KINDS, Deliver, TaskChannel

try:
    import redis
    from redis.client import PubSub
except ImportError as missing:  # pragma: no cover - depends on the installation
    raise ImportError("RedisTaskChannel needs redis-py: pip install 'minimcp-sync[redis]'") from missing

logger = logging.getLogger("minimcp.server.tasks")

#: How long the first subscription may take to be confirmed before the thread carries on without it.
_SUBSCRIBE_TIMEOUT = 5.0


class RedisTaskChannel(TaskChannel):
    """Status, cancellations, resumptions and heartbeats over Redis pub/sub.

    ``client`` is a ``redis.Redis``; ``prefix`` must match the ``RedisTaskStore``'s when both
    serve one deployment. ``heartbeat`` (seconds) is how long a silent process is taken for alive
    (2 s: a killed process's tasks fail on the next poll after that, and a live one must miss
    three beats in a row, one every ``heartbeat / 3``, to be taken for dead);
    ``max_backoff`` (seconds) bounds the wait between reconnection attempts.
    """

    heartbeat: float  # always set: processes share this channel

    def __init__(self, client: RedisClient, *, prefix: str = "minimcp:tasks", heartbeat: float = 2.0,
                 max_backoff: float = 5.0) -> None:
        if heartbeat <= 0 or max_backoff <= 0:
            raise ValueError("heartbeat and max_backoff must be positive")
        self.client = client
        self.prefix = prefix
        self.heartbeat = heartbeat
        self.max_backoff = max_backoff
        self._deliver: Deliver | None = None
        self._tick: Callable[[], None] = lambda: None
        # _lock guards _pid, _id, _stop and _thread: which process started the listener, and how
        # to stop it. It is held while starting, a wait bounded by the client's socket_timeout and
        # _SUBSCRIBE_TIMEOUT. The listener thread is handed its id and stop event, and reads nothing else.
        self._lock = threading.Lock()
        self._pid: int | None = None
        self._id = ""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        warn_if_unbounded(client, "RedisTaskChannel")

    @property
    def heartbeat_interval(self) -> float:
        return self.heartbeat / 3

    def _key(self, *parts: str) -> str:
        return key_in_slot(self.prefix, *parts)

    def attach(self, deliver: Deliver, tick: Callable[[], None]) -> None:
        self._deliver = deliver
        self._tick = tick

    @property
    def process_id(self) -> str:
        with self._lock:
            if self._pid != os.getpid():
                self._start()
            return self._id

    def _start(self) -> None:
        """Take a process id, say it is alive, subscribe and start the listener (caller holds ``_lock``)."""
        self._pid = os.getpid()
        self._id = secrets.token_hex(8)
        self._stop = threading.Event()
        pubsub = None
        try:
            self._beat(self._id)
            pubsub = self._subscribe(self._id)
        except redis.RedisError as failure:
            logger.warning("task channel: Redis unavailable at start (%s); retrying in the background", failure)
        self._thread = threading.Thread(target=self._listen, args=(self._id, self._stop, pubsub),
                                        name="minimcp-task-channel", daemon=True)
        self._thread.start()

    def _subscribe(self, process_id: str) -> PubSub:
        """A pubsub on the status channel and ``process_id``'s own, confirmed by Redis before it is returned."""
        pubsub = self.client.pubsub()
        try:
            pubsub.subscribe(self._key("status"), self._key("to", process_id))
            confirmed, deadline = 0, time.monotonic() + _SUBSCRIBE_TIMEOUT
            while confirmed < 2 and time.monotonic() < deadline:
                message = pubsub.get_message(timeout=max(0.0, deadline - time.monotonic()))
                if message is not None and message.get("type") == "subscribe":
                    confirmed += 1
        except BaseException:
            pubsub.close()
            raise
        return pubsub

    def _beat(self, process_id: str) -> None:
        self.client.set(self._key("alive", process_id), b"1", px=max(1, round(self.heartbeat * 1000)))

    def _listen(self, process_id: str, stop: threading.Event, pubsub: PubSub | None) -> None:
        """The listener thread: messages, heartbeats and ticks until ``stop``; reconnects with backoff."""
        backoff = 0.1
        next_beat = time.monotonic() + self.heartbeat_interval
        while not stop.is_set():
            try:
                if pubsub is None:
                    pubsub = self._subscribe(process_id)
                    next_beat = time.monotonic()  # beat and catch up at once after a reconnection
                backoff = 0.1
                now = time.monotonic()
                if now >= next_beat:
                    self._beat(process_id)
                    self._safe_tick()
                    next_beat = now + self.heartbeat_interval
                message = pubsub.get_message(ignore_subscribe_messages=True,
                                             timeout=max(0.0, min(next_beat - time.monotonic(), 1.0)))
                if message is not None and message.get("type") == "message":
                    self._dispatch(message["data"])
            except Exception as failure:  # noqa: BLE001 - a listener that dies stops the heartbeat: its tasks would fail
                logger.warning("task channel: Redis unavailable (%r); reconnecting in %.1f s", failure, backoff)
                if pubsub is not None:
                    with contextlib.suppress(Exception):  # its connection may be broken already
                        pubsub.close()
                pubsub = None
                stop.wait(backoff)
                backoff = min(backoff * 2, self.max_backoff)
        if pubsub is not None:
            pubsub.close()

    def _safe_tick(self) -> None:
        try:
            self._tick()
        except Exception:  # the listener must outlive a failing catch-up; the next tick tries again
            logger.exception("task channel: catching up with the held tasks failed")

    def _dispatch(self, data: bytes | str) -> None:
        """Hand one message to the manager; a malformed one (another writer on our channel) is dropped."""
        try:
            message = json.loads(data)
            kind, task_id, params = message["k"], message["t"], message.get("p")
            if kind not in KINDS or not isinstance(task_id, str):
                raise ValueError(kind)
        except (ValueError, KeyError, TypeError):
            logger.warning("task channel: dropped a malformed message %.200r", data)
            return
        if self._deliver is not None:
            try:
                self._deliver(kind, task_id, params)
            except Exception:  # one bad delivery must not stop the listener
                logger.exception("task channel: delivering %s for task %s failed", kind, task_id)

    def announce(self, task_id: str, params: dict[str, Any]) -> None:
        try:  # this process's own listens hear it through the channel too: listen_filter started it
            self.client.publish(self._key("status"), json.dumps({"k": "status", "t": task_id, "p": params}))
        except redis.RedisError as failure:
            logger.warning("task channel: the status of task %s was not announced (%s)", task_id, failure)

    def tell(self, process_id: str, kind: str, task_id: str) -> None:
        try:
            self.client.publish(self._key("to", process_id), json.dumps({"k": kind, "t": task_id}))
        except redis.RedisError as failure:  # the holder's next tick reads the record and catches up
            logger.warning("task channel: %s of task %s not sent (%s)", kind, task_id, failure)

    def alive(self, process_id: str) -> bool:
        try:
            return bool(self.client.exists(self._key("alive", process_id)))
        except redis.RedisError as failure:
            raise TaskStoreUnavailable(f"The task channel (Redis) is unavailable: {failure}") from failure

    def close(self) -> None:
        """Stop the listener (bounded wait) and withdraw the heartbeat, so no one waits on this process."""
        with self._lock:
            stop, thread, process_id, started = self._stop, self._thread, self._id, self._pid == os.getpid()
            self._pid, self._thread = None, None
        if not started:
            return
        stop.set()
        if thread is not None:
            thread.join(5.0)
            if thread.is_alive():
                logger.warning("task channel: the listener did not stop within 5 s")
        try:
            self.client.delete(self._key("alive", process_id))
        except redis.RedisError:
            logger.warning("task channel: could not withdraw the heartbeat of %s", process_id)
