"""``Backend``: the bundle of stores behind everything a server keeps between requests.

A server in one process keeps its state in memory (``MemoryBackend``, the core's default). A
deployment of several processes (``gunicorn -w 4``, or several machines behind a load balancer)
shares it through a backend whose ``shared`` is true (``RedisBackend``): the request-state keys and
the requestStates already used, the legacy sessions, the messages that must reach the process
holding a waiting worker or an open stream, the subscription fan-out and the tasks. Each of those
is a port the core declares (``minimcp.server.core.ports``); a backend implements them, and the core
asks it without knowing which one it has. A backend that cannot be reached raises
``BackendUnavailable``, which the HTTP edge answers 503 with ``Retry-After`` (never "Session not
found", which makes a client start over); one that refuses the server's configuration raises
``BackendMisconfigured``, which stops a server at start-up and is answered 500 later on.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from minimcp.server.core.faults import BackendMisconfigured, BackendUnavailable
from minimcp.server.core.in_process import MemoryBackend
from minimcp.server.core.ports import SessionListener, SessionStore, Stores, SubscriptionBus, TaskChannel, TaskStore

__all__ = ["Backend", "BackendMisconfigured", "BackendUnavailable", "SessionListener", "SharedBackend"]



class Backend(Stores, ABC):
    """Where a server keeps what outlives one request, for one process or for many: the key ring
    it is, and the bus and the tasks' stores it hands out (``minimcp.server.core.ports.Stores``).

    ``shared`` says whether other processes see the same state; only then do sessions, questions
    and streams travel through it (a memory backend leaves every one of them where it is today).
    """

    shared: bool = False
    #: Seconds an HTTP client is told to wait (``Retry-After``) while the backend is unreachable.
    retry_after: int = 1

    @abstractmethod
    def subscription_bus(self) -> SubscriptionBus:
        """The bus ``ctx.notify_*`` publishes on and every listen stream of every process hears."""

    def task_store(self) -> TaskStore | None:
        """Where the tasks are kept; ``None``: the task manager's own store, in this process."""
        return None

    def task_channel(self) -> TaskChannel | None:
        """How the processes sharing the task store hear of each other's tasks (status, cancels,
        heartbeats); ``None``: one process, nothing to hear."""
        return None

    def named_for(self, server_name: str) -> None:
        """The server keeping its state here is called ``server_name``: a backend that names its
        keys and was given no prefix takes one from it, so that two differently named servers on
        one database never share state (and every process of one server finds the same)."""

    def close(self) -> None:
        """Release connections and threads; the backend may be used again afterwards."""


class SharedBackend(Backend, SessionStore):
    """A backend other processes see too (``RedisBackend``): legacy sessions, the questions their
    workers wait on and the streams they feed then travel through it (it is the core's
    ``SessionStore``), so any process serves any request of any session."""

    shared = True


# The core's in-process state is a backend like any other: ``backend=MemoryBackend()`` is accepted
# wherever a ``Backend`` is, and ``isinstance(server.backend, Backend)`` holds for the default.
Backend.register(MemoryBackend)
