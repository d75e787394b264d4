"""Connection handling: the loop that owns the listening socket and every parked connection.

One thread, the loop (``serve_forever``), owns the listening socket and every connection that is
not running a request. Idle keep-alive connections, and requests whose head is still arriving,
wait in a ``selectors`` selector: they cost a descriptor and no thread, and the loop reads their
bytes without blocking. A complete head goes to a worker thread, which runs the app through the
WSGI bridge, and hands the connection back to the loop.
"""

from __future__ import annotations

import errno
import heapq
import itertools
import logging
import os
import selectors
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable
from typing import Any

from minimcp.httpd import affinity, sockets
from minimcp.httpd.bridge import WSGIBridge
from minimcp.httpd.limits import (ACCEPT_BATCH, ACCEPT_PAUSE, KEEP_ALIVE_GRACE, LINGER, LOG_INTERVAL, MAX_DRAIN,
                                  MAX_LINGERING, RECV_SIZE, SIBLING_YIELD, STATUS, WORKER_IDLE, kept_for_answers)
from minimcp.httpd.parsing import NEED_DATA, PARSERS, BadRequest, Event, Head, Parser
from minimcp.thread_pool import PoolFull, ThreadPool

logger = logging.getLogger("minimcp.httpd")

_OUT_OF_DESCRIPTORS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


def _recv_ready(sock: socket.socket) -> bytes | None:
    """What a non-blocking socket the selector reported readable holds: ``None`` when nothing is there
    after all, ``b""`` when the peer closed or the connection failed."""
    try:
        return sock.recv(RECV_SIZE)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _cut(sock: socket.socket) -> None:
    """Make a worker's next read or send on ``sock`` fail (the worker closes the socket)."""
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


class _Connection:
    """A client connection. Owned by the loop while parked (idle, or its head still arriving), by one
    worker while a request runs; ``parked`` and ``deadline`` are the loop's (a worker hands the
    connection back through ``WSGIServer._hand_back``, never touching the loop's state)."""

    __slots__ = ("sock", "address", "parser", "parked", "waiting", "deadline", "served", "keep")

    def __init__(self, sock: socket.socket, address: tuple[Any, ...], deadline: float, parser: Parser) -> None:
        self.sock = sock
        self.address = address
        self.parser = parser
        self.parked = False
        self.waiting: Head | None = None  # a complete request waiting for a free worker: the loop's
        self.deadline = deadline
        self.served = 0  # requests answered: the worker's (see KEEP_ALIVE_GRACE)
        self.keep = False  # whether the worker's last exchange left it reusable: the worker's


class _Lingering:
    """A closing socket whose unread input the loop discards until EOF, ``MAX_DRAIN`` bytes or ``deadline``."""

    __slots__ = ("sock", "deadline", "left")

    def __init__(self, sock: socket.socket, deadline: float) -> None:
        self.sock = sock
        self.deadline = deadline
        self.left = MAX_DRAIN


class _Tally:
    """A recurring event (a refused connection, a descriptor shortage), logged at most once per
    ``LOG_INTERVAL`` with a count, so that a flood shows in the log without filling it. Used by the
    loop thread only."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._count = 0
        self._logged = -LOG_INTERVAL

    def add(self, detail: object = "") -> None:
        self._count += 1
        now = time.monotonic()
        if now - self._logged >= LOG_INTERVAL:
            logger.warning("%s (%d since the last report)%s", self.what, self._count, f": {detail}" if detail else "")
            self._count = 0
            self._logged = now


class WSGIServer:
    """Serve ``app`` on ``host:port`` (port 0 picks a free one; see ``port``) until ``shutdown()``.

    ``serve_forever()`` runs the loop in the calling thread; requests run on up to ``max_workers``
    worker threads (by default ``max_connections``), started on demand. A complete request that finds
    every one of them busy waits in the loop, holding no thread, for up to ``wait_timeout`` seconds,
    first come first served, and is answered ``503`` only then: a burst one over the threads is
    served a moment late, not refused. An event stream (a GET accepting ``text/event-stream``)
    holds its thread while it stays open: streams may take all but ``stream_reserve`` threads (by
    default an eighth, ``limits.kept_for_answers``), and one past them is answered ``503`` at once
    (see ``_stream_refusal``). ``shared_listener``: other processes accept on ``listener`` too
    (gunicorn's workers); then a busy server leaves new connections to idler ones for a moment
    (``_yield_to_siblings``). ``max_connections_per_peer=None`` lifts
    the per-address cap (behind a proxy every connection comes from the proxy's address).
    ``parser`` names the request parser (see ``minimcp.httpd.parsing.PARSERS``): by default
    httptools's when it is installed, else h11's; both give the same verdicts. ``listener``, a
    listening TCP socket bound already (a process manager's, such as gunicorn's), is served instead
    of binding ``host:port``; the server closes it when it stops.

    ``pin_cpu`` keeps the loop and every thread it starts on one CPU while it serves (see
    ``minimcp.httpd.affinity``: the threads take turns at the GIL, and turns between cores cost more
    than the requests): the one the loop starts on, or the ``cpu_index``-th of those allowed, until
    another process crowds it (then they move to a quieter one, ``affinity.Pin.look``). Pass
    ``pin_cpu=False`` when the app does much parallel work outside the GIL (large numeric arrays,
    say), which one core would serialise.

    At ``max_connections`` a newcomer closes the longest-idle keep-alive connection (parked, with no
    byte of a next request): such a connection holds no request, so closing it loses nothing, and
    thousands of them held open from a few addresses cannot lock every other client out. Only when
    every connection holds a request is the newcomer answered ``503`` (a connection whose worker
    waits ``KEEP_ALIVE_GRACE`` for its next request counts as holding one meanwhile).

    Threads: the loop alone touches the selector, ``_conns``, ``_resting``, ``_waiting``, ``_per_peer``,
    ``_timers``, ``_lingering`` and ``_pin`` (a worker reads whether ``_waiting`` is empty, a hint
    that may be a moment stale, to skip its keep-alive grace). ``_handback_lock`` guards
    ``_handback`` (connections workers return), ``_wake_pending`` and ``_loop_done``; ``_busy_lock`` (with ``_idle``) guards ``_busy``, the
    requests running on workers, which ``shutdown()`` waits for.
    """

    def __init__(self, app: Callable[..., Iterable[bytes]], host: str = "127.0.0.1", port: int = 0, *,
                 max_connections: int = 4096, max_connections_per_peer: int | None = 256,
                 max_workers: int | None = None, wait_timeout: float = 10.0,
                 idle_timeout: float = 75.0, header_timeout: float = 10.0, body_timeout: float = 30.0,
                 parser: str | None = None, listener: socket.socket | None = None, pin_cpu: bool = True,
                 cpu_index: int | None = None, stream_reserve: int | None = None,
                 shared_listener: bool = False) -> None:
        if parser is not None and parser not in PARSERS:
            raise ValueError(f"no parser {parser!r} here; these are: {', '.join(PARSERS)}")
        self._parser: type[Parser] = PARSERS[parser] if parser is not None else next(iter(PARSERS.values()))
        self.app = app
        self.max_connections = max_connections
        self.max_connections_per_peer = max_connections_per_peer
        self.max_workers = max_connections if max_workers is None else max_workers
        self.stream_reserve = kept_for_answers(self.max_workers) if stream_reserve is None else stream_reserve
        self.shared_listener = shared_listener
        self._yielded = False  # the loop's: accepting was paused for the siblings (_yield_to_siblings)
        self.wait_timeout = wait_timeout
        self.idle_timeout = idle_timeout
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.pin_cpu = pin_cpu
        self.cpu_index = cpu_index
        if listener is None:
            listener = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
            listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            listener.bind((host, port))
            listener.listen(1024)
        else:
            host = listener.getsockname()[0]
        listener.setblocking(False)
        self._listener = listener
        self.host = host
        self.port: int = listener.getsockname()[1]
        self._drain = False  # set by shutdown() before _stopping; read by the loop once it sees _stopping
        self._unfinished: list[socket.socket] = []  # running requests' sockets at the loop's end (drain=True)
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._pin: affinity.Pin | None = None  # the loop's, while it serves
        self._stopping = threading.Event()
        self._stopped = threading.Event()
        self._serving = False
        # The server's own pool, not the MCP server's call pool: a request holds its worker while the
        # app runs and while its connection waits KEEP_ALIVE_GRACE for the next request. A full pool
        # refuses at once, so the loop never waits: the request joins _waiting instead.
        self._pool = ThreadPool(self.max_workers, wait_timeout=0.0, idle_timeout=WORKER_IDLE,
                                thread_name="minimcp-httpd")
        # Connections whose complete request found every worker busy, oldest first.
        self._waiting: deque[_Connection] = deque()
        self._handback_lock = threading.Lock()
        self._handback: list[tuple[_Connection, bool]] = []
        self._wake_pending = False
        self._loop_done = False
        self._busy_lock = threading.Lock()
        self._idle = threading.Condition(self._busy_lock)
        self._busy = 0
        self._selector: selectors.BaseSelector | None = None
        self._conns: set[_Connection] = set()
        # The parked connections holding no request, in the order they became so: the first one has
        # been idle longest (a dict keeps insertion order; re-parking moves a connection to the end).
        self._resting: dict[_Connection, None] = {}
        self._per_peer: Counter[Any] = Counter()
        self._lingering: set[_Lingering] = set()
        self._timers: list[tuple[float, int, Any]] = []  # (deadline, tie-break, connection or lingering)
        self._sequence = itertools.count()
        self._accept_resumes: float | None = None  # accepting paused until then (no descriptor left, or yielding)
        self._reserve: int | None = os.open(os.devnull, os.O_RDONLY)  # spent to answer when none is left
        self._refusals = _Tally("refusing connections")
        self._evictions = _Tally(f"closing the longest-idle connection for a new one ({max_connections} connections open)")
        self._shortage = _Tally("out of file descriptors: answering new connections 503")
        self._bridge = WSGIBridge(app, host, self.port, body_timeout=body_timeout, refusal=self._stream_refusal)
        # _stream_tally_lock guards _stream_tally: event streams are refused on the workers, not the loop.
        self._stream_tally_lock = threading.Lock()
        self._stream_tally = _Tally("refusing event streams")

    # --- lifecycle ---------------------------------------------------------------------------------
    def serve_forever(self) -> None:
        self._serving = True
        self._pin = affinity.pin(self.cpu_index) if self.pin_cpu else None
        try:
            with selectors.DefaultSelector() as selector:
                self._selector = selector
                selector.register(self._listener, selectors.EVENT_READ)
                selector.register(self._wake_r, selectors.EVENT_READ)
                try:
                    self._loop(selector)
                finally:
                    self._close_all()
        finally:
            if self._pin is not None:
                self._pin.release()
            self._stopped.set()

    def run(self) -> None:
        """``serve_forever`` until Ctrl-C (``KeyboardInterrupt``), then ``shutdown``."""
        try:
            self.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            self.shutdown()

    def shutdown(self, timeout: float = 5.0, *, drain: bool = False) -> None:
        """Stop accepting, close every connection, and wait (up to ``timeout``) for running requests.

        The running requests are cut short at once (their next read or send fails), unless
        ``drain``: then they run on and send their answers, a graceful stop (gunicorn's on ``TERM``),
        and only those still running at ``timeout`` are cut. Idle connections close either way.
        Idempotent; a server whose ``serve_forever`` never ran shuts down at once.
        """
        if self._stopping.is_set():
            return
        deadline = time.monotonic() + timeout
        self._drain = drain
        self._stopping.set()
        self._wake()
        if self._serving:
            self._stopped.wait(timeout)
        with self._idle:
            while self._busy and self._idle.wait(max(0.0, deadline - time.monotonic())):
                pass
        for sock in self._unfinished:
            _cut(sock)
        self._listener.close()
        self._wake_r.close()
        self._wake_w.close()
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None
        self._pool.close()

    def _wake(self) -> None:
        try:
            self._wake_w.send(b"\0")
        except OSError:
            pass  # the buffer is full (a wake is pending anyway) or the server is closed

    # --- the loop ----------------------------------------------------------------------------------
    def _loop(self, selector: selectors.BaseSelector) -> None:
        while not self._stopping.is_set():
            now = time.monotonic()
            wait = self._timers[0][0] - now if self._timers else None
            if self._accept_resumes is not None:
                wait = min(wait if wait is not None else ACCEPT_PAUSE, self._accept_resumes - now)
            if self._pin is not None:
                look = self._pin.next_look - now
                wait = look if wait is None else min(wait, look)
            for key, _ in selector.select(None if wait is None else max(0.0, wait)):
                owner = key.data
                if type(owner) is _Connection:
                    self._read_head(owner)
                elif type(owner) is _Lingering:
                    self._discard_input(owner)
                elif key.fileobj is self._listener:
                    self._accept()
                else:
                    self._take_back()
            self._expire(time.monotonic())

    def _accept(self) -> None:
        if self.shared_listener and self._yield_to_siblings():
            return
        for _ in range(1 if self.shared_listener else ACCEPT_BATCH):
            try:
                sock, address = self._listener.accept()
            except BlockingIOError:
                return
            except OSError as exc:
                if exc.errno in _OUT_OF_DESCRIPTORS:
                    self._out_of_descriptors()
                else:
                    self._refusals.add(f"accept failed: {exc}")
                return
            peer = address[0]
            if self.max_connections_per_peer is not None and self._per_peer[peer] >= self.max_connections_per_peer:
                self._refuse(sock, f"{peer} has {self._per_peer[peer]} connections open")
            elif len(self._conns) >= self.max_connections and not self._make_room():
                self._refuse(sock, f"{len(self._conns)} connections are open, each with a request")
            else:
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                # The read bound is a worker's wait for a next request; recv_within restores it.
                sockets.bound(sock, self.idle_timeout, KEEP_ALIVE_GRACE)
                conn = _Connection(sock, address, time.monotonic() + self.header_timeout, self._parser())
                self._conns.add(conn)
                self._per_peer[peer] += 1
                self._park(conn)

    def _make_room(self) -> bool:
        """Close the longest-idle connection for a newcomer; ``False`` when every one holds a request.

        A connection whose next request is already in its socket is not idle: its bytes are read
        first (it moves to the end of the order, or leaves it with a request begun). Connections
        workers have handed back count too, so they are taken back first.
        """
        self._take_back()
        for _ in range(len(self._resting)):
            conn = next(iter(self._resting))
            try:
                pending = conn.sock.recv(1, socket.MSG_PEEK)
            except OSError:  # nothing to read (or the connection failed): it is idle
                pending = b""
            if pending:
                self._read_head(conn)
                if conn in self._resting:  # only empty lines came: it is the youngest now
                    del self._resting[conn]
                    self._resting[conn] = None
                continue
            self._evictions.add()
            self._unpark(conn)
            self._close_connection(conn)
            return True
        return False

    def _refuse(self, sock: socket.socket, reason: str) -> None:
        self._refusals.add(reason)
        sock.setblocking(False)
        try:
            sock.send(self._bridge.error_bytes(STATUS[503], "Too many connections; try again later"))
        except OSError:
            pass
        self._linger(sock)

    def _out_of_descriptors(self) -> None:
        """``accept`` failed for want of a descriptor, and the client waits in the backlog. Spend the
        reserved descriptor to answer it 503 and close it (without a lingering read: no descriptor to
        spare), then take the reserve back; when even that fails, pause accepting for a moment rather
        than spin on a listener that stays readable."""
        self._shortage.add()
        if self._reserve is not None:
            os.close(self._reserve)
            self._reserve = None
            try:
                sock, _ = self._listener.accept()
            except OSError:
                pass
            else:
                sock.setblocking(False)
                try:
                    sock.send(self._bridge.error_bytes(STATUS[503], "Out of resources; try again later"))
                    sock.recv(RECV_SIZE)  # what already arrived, so the close does not reset the answer
                except OSError:
                    pass
                sock.close()
        try:
            self._reserve = os.open(os.devnull, os.O_RDONLY)
        except OSError:
            assert self._selector is not None
            self._selector.unregister(self._listener)
            self._accept_resumes = time.monotonic() + ACCEPT_PAUSE

    def _yield_to_siblings(self) -> bool:
        """Loop, on a listener other processes accept on too (``shared_listener``, gunicorn's
        workers): whether to leave the waiting connection to them for a moment. Every process wakes
        for each connection and the first to accept takes it, so without this one process may take
        most of a burst and run out of threads while the others idle (seen: 198 of 200 legacy
        clients on one of four workers). A process busier than a quarter of its threads pauses
        accepting for ``SIBLING_YIELD`` times its load, so an idler one wins the race; when all are
        busy, each still accepts after its pause. One connection per wake, for the same reason."""
        if self._yielded:  # paused already: this wake accepts
            self._yielded = False
            return False
        load = self._busy / self.max_workers  # a hint: the workers change it under the loop's feet
        if load < 0.25:
            return False
        self._yielded = True
        assert self._selector is not None
        self._selector.unregister(self._listener)
        self._accept_resumes = time.monotonic() + SIBLING_YIELD * load
        return True

    def _park(self, conn: _Connection) -> None:
        """Wait in the selector for the connection's next bytes, until ``conn.deadline``."""
        assert self._selector is not None
        conn.parked = True
        if not conn.parser.started:
            self._resting[conn] = None
        self._selector.register(conn.sock, selectors.EVENT_READ, conn)
        self._add_timer(conn)

    def _add_timer(self, owner: _Connection | _Lingering) -> None:
        heapq.heappush(self._timers, (owner.deadline, next(self._sequence), owner))
        if len(self._timers) > 2 * (len(self._conns) + len(self._lingering)) + 1024:
            # Entries whose owner moved on are dropped when due; rebuild before they pile up.
            self._timers = [entry for entry in self._timers if self._timer_is_live(entry)]
            heapq.heapify(self._timers)

    @staticmethod
    def _timer_is_live(entry: tuple[float, int, Any]) -> bool:
        deadline, _, owner = entry
        return owner.deadline == deadline and (type(owner) is _Lingering or owner.parked or owner.waiting is not None)

    def _expire(self, now: float) -> None:
        if self._pin is not None and now >= self._pin.next_look:
            self._pin.look(now)
        if self._accept_resumes is not None and now >= self._accept_resumes:
            assert self._selector is not None
            self._accept_resumes = None
            self._selector.register(self._listener, selectors.EVENT_READ)
        while self._timers and self._timers[0][0] <= now:
            entry = heapq.heappop(self._timers)
            if not self._timer_is_live(entry):
                continue
            owner = entry[2]
            if type(owner) is _Lingering:
                self._end_lingering(owner)
            elif owner.waiting is not None:  # no worker came free in time
                self._waiting.remove(owner)
                owner.waiting = None
                self._refusals.add(f"no worker came free within {self.wait_timeout}s")
                self._send_now(owner.sock, STATUS[503], "Too many requests at once; try again later")
                self._close_connection(owner)
            elif owner.parser.started:  # a head began and did not finish in time
                self._unpark(owner)
                self._send_now(owner.sock, STATUS[408], "The request head did not arrive in time")
                self._close_connection(owner)
            else:  # idle: close quietly
                self._unpark(owner)
                self._close_connection(owner)

    def _unpark(self, conn: _Connection) -> None:
        assert self._selector is not None
        self._selector.unregister(conn.sock)
        conn.parked = False
        self._resting.pop(conn, None)

    def _read_head(self, conn: _Connection) -> None:
        """The loop's part of a request: take what arrived, and hand a complete head to a worker."""
        data = _recv_ready(conn.sock)
        if data is None:
            return
        if not data:  # the client closed (an unfinished head is abandoned with it)
            self._unpark(conn)
            self._close_connection(conn)
            return
        parser = conn.parser
        started = parser.started
        try:
            parser.feed(data)
            request = parser.next_event()
        except BadRequest as bad:
            self._unpark(conn)
            self._send_now(conn.sock, bad.status, str(bad))
            self._close_connection(conn)
            return
        if request is NEED_DATA:
            if parser.started and not started:  # the head's clock starts with its first byte
                del self._resting[conn]
                conn.deadline = min(conn.deadline, time.monotonic() + self.header_timeout)
                self._add_timer(conn)
            return
        self._unpark(conn)
        self._start(conn, request)  # type: ignore[arg-type]  # a parser's first event past NEED_DATA is its Head

    def _start(self, conn: _Connection, request: Head) -> None:
        if not self._submit(conn, request):  # every worker busy: wait in line, holding no thread
            conn.waiting = request
            conn.deadline = time.monotonic() + self.wait_timeout
            self._waiting.append(conn)
            self._add_timer(conn)

    def _start_waiting(self) -> None:
        """Give the workers that came free to the waiting requests, oldest first."""
        while self._waiting:
            conn = self._waiting[0]
            request, conn.waiting = conn.waiting, None
            assert request is not None
            if not self._submit(conn, request):
                conn.waiting = request  # still first in line, its deadline unchanged
                return
            self._waiting.popleft()

    def _submit(self, conn: _Connection, request: Head) -> bool:
        """Hand ``request`` to a worker; ``False`` when every worker is busy. When the system refuses
        a thread the client is answered ``503`` at once (that is no reason to wait)."""
        with self._busy_lock:
            self._busy += 1
        try:
            self._pool.submit(lambda: self._serve(conn, request), then=lambda: self._finish(conn))
            return True
        except (PoolFull, RuntimeError) as exc:
            with self._idle:
                self._busy -= 1
                self._idle.notify_all()
            if isinstance(exc, PoolFull):
                return False
            self._refusals.add(exc)
            self._send_now(conn.sock, STATUS[503], "Too many requests at once; try again later")
            self._close_connection(conn)
            return True

    def _take_back(self) -> None:
        """Connections that workers finished with: park the kept-alive ones, close the others."""
        try:
            while self._wake_r.recv(4096):
                pass
        except OSError:
            pass
        with self._handback_lock:
            returned, self._handback = self._handback, []
            self._wake_pending = False
        now = time.monotonic()
        for conn, keep in returned:
            if not keep:
                self._close_connection(conn)
                continue
            conn.sock.setblocking(False)
            timeout = self.header_timeout if conn.parser.started else self.idle_timeout
            conn.deadline = now + timeout
            self._park(conn)
        if self._waiting:
            self._start_waiting()

    def _close_connection(self, conn: _Connection) -> None:
        self._conns.discard(conn)
        peer = conn.address[0]
        self._per_peer[peer] -= 1
        if self._per_peer[peer] <= 0:
            del self._per_peer[peer]
        self._linger(conn.sock)

    def _linger(self, sock: socket.socket) -> None:
        """Close ``sock`` after a lingering read: closing with unread input makes the kernel send a
        reset, which can destroy the response the client has not read yet (a refused body, a 503).
        The selector does the reading, for ``LINGER`` seconds and ``MAX_DRAIN`` bytes at most."""
        try:
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            sock.close()
            return
        if len(self._lingering) >= MAX_LINGERING or self._stopping.is_set():
            sock.close()
            return
        assert self._selector is not None
        sock.setblocking(False)
        lingering = _Lingering(sock, time.monotonic() + LINGER)
        self._lingering.add(lingering)
        self._selector.register(sock, selectors.EVENT_READ, lingering)
        self._add_timer(lingering)

    def _discard_input(self, lingering: _Lingering) -> None:
        data = _recv_ready(lingering.sock)
        if data is None:
            return
        lingering.left -= len(data)
        if not data or lingering.left <= 0:
            self._end_lingering(lingering)

    def _end_lingering(self, lingering: _Lingering) -> None:
        assert self._selector is not None
        self._lingering.discard(lingering)
        lingering.deadline = -1.0  # its timer entry, if any, is stale now
        self._selector.unregister(lingering.sock)
        lingering.sock.close()

    def _close_all(self) -> None:
        """The loop's last act: close what it owns and cut the running requests short."""
        with self._handback_lock:
            self._loop_done = True
            returned, self._handback = self._handback, []
        for conn, _ in returned:
            conn.sock.close()
            self._conns.discard(conn)
        for conn in self._waiting:  # accepted, never started: told so rather than dropped
            self._send_now(conn.sock, STATUS[503], "The server is shutting down; try again later")
            conn.sock.close()
        for conn in self._conns:
            if conn.waiting is not None:
                continue  # closed above
            if conn.parked:
                conn.sock.close()
            elif self._drain:  # a worker has it and may finish: shutdown() cuts it if it overruns
                self._unfinished.append(conn.sock)
            else:  # a worker has it: make its next read or send fail; it closes the socket
                _cut(conn.sock)
        for lingering in self._lingering:
            lingering.sock.close()
        self._conns.clear()
        self._resting.clear()
        self._waiting.clear()
        self._lingering.clear()
        self._timers.clear()
        self._listener.close()

    def _send_now(self, sock: socket.socket, status: str, text: str) -> None:
        """An error answer from the loop: one non-blocking send (a new connection's send buffer is
        empty, and an answer this small fits; if it does not, the client was not reading anyway)."""
        try:
            sock.send(self._bridge.error_bytes(status, text))
        except OSError:
            pass

    # --- a worker's part ---------------------------------------------------------------------------
    def _hand_back(self, conn: _Connection, keep: bool) -> None:
        with self._handback_lock:
            if not self._loop_done:
                self._handback.append((conn, keep))
                wake, self._wake_pending = not self._wake_pending, True
            else:
                wake = False
                conn.sock.close()
        if wake:
            self._wake()

    def _serve(self, conn: _Connection, request: Head) -> None:
        """Worker: answer ``request``, and the requests already received after it (``_finish`` then
        hands the connection back to the loop)."""
        keep = False
        try:
            sockets.take(conn.sock)
            while True:
                keep = (self._bridge.exchange(conn.sock, conn.parser, request, conn.address)
                        and not self._stopping.is_set())
                if not keep:
                    break
                conn.served += 1
                conn.parser = self._parser(conn.parser.leftover())
                request = conn.parser.next_event()  # type: ignore[assignment]  # a Head, or NEED_DATA: see below
                if request is NEED_DATA and not conn.parser.started and conn.served > 1 and not self._waiting:
                    request = self._next_request_soon(conn)  # type: ignore[assignment]  # the same
                if request is NEED_DATA:
                    break  # the loop waits for the rest (a started head, within header_timeout)
        except BadRequest as bad:  # the next pipelined head
            keep = False
            self._bridge.send_error(conn.sock, bad.status, str(bad))
        except (OSError, ValueError):
            keep = False  # the client went away or timed out; nothing is left to answer
        except Exception:  # a fault of this server's own: end the connection, keep serving the others
            keep = False
            logger.exception("connection from %s failed", conn.address[0])
        finally:
            conn.keep = keep

    def _stream_refusal(self, environ: dict[str, Any]) -> str | None:
        """Worker: why the event stream ``environ`` asks for (a GET accepting ``text/event-stream``)
        is refused now, else ``None``. A stream holds its thread while it stays open, so streams may
        take all but ``stream_reserve`` threads: the rest stay for requests that end (a legacy
        client's answer, which a question holding another thread waits for), and a stream past
        them is refused at once, since waiting would not free a thread."""
        if not self.stream_reserve or environ["REQUEST_METHOD"] != "GET" \
                or "text/event-stream" not in environ.get("HTTP_ACCEPT", ""):
            return None
        streams = self.max_workers - self.stream_reserve
        if self._busy <= streams:  # this request counted; a hint that may be a moment stale
            return None
        with self._stream_tally_lock:
            self._stream_tally.add(f"{streams} of the {self.max_workers} threads hold requests (raise the thread count)")
        return (f"No thread is free for another event stream: this server gives streams at most {streams} of its "
                f"{self.max_workers} threads and keeps the others for requests that end, such as answers; "
                f"open the stream again after Retry-After")

    def _finish(self, conn: _Connection) -> None:
        """Worker, after ``_serve``, once the pool counts it free: only then may the connection's
        next request reach the loop, or that request would find every worker still taken and be
        refused with 503 (at ``max_connections``)."""
        self._hand_back(conn, conn.keep)
        with self._idle:
            self._busy -= 1
            if not self._busy:
                self._idle.notify_all()

    def _next_request_soon(self, conn: _Connection) -> Event:
        """The next request if its bytes arrive within ``KEEP_ALIVE_GRACE``, else ``NEED_DATA``
        (nothing came, or only part of a head); ``ConnectionError`` when the client closed."""
        try:
            data = sockets.recv(conn.sock)
        except TimeoutError:
            return NEED_DATA
        if not data:
            raise ConnectionError("the client closed the connection")
        conn.parser.feed(data)
        return conn.parser.next_event()

