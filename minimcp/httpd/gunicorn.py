"""A gunicorn worker class that serves the WSGI app with this package's HTTP server.

``gunicorn -k minimcp.httpd.gunicorn.Worker -w 4 --threads 256 app:app``

gunicorn manages the processes: the master, ``-w N``, reload on ``HUP``, graceful ``TERM``,
``--max-requests``, the ``--timeout`` heartbeat, log reopening on ``USR1``. Each worker process
serves its share of gunicorn's listening sockets with ``WSGIServer``, whose loop parks idle
connections in a selector and runs each request on a thread of its own, instead of gunicorn
gthread's pure-Python parser and its hand-offs between the selector and a thread pool, which cost
more per request than a small MCP call does. The same scheme as uvicorn's ``UvicornWorker``.

How gunicorn's settings map:

- the listeners: gunicorn's (``-b``, ``--reuse-port``); each is served by a loop of its own. TCP
  only: TLS (``--certfile``) and unix sockets are refused; put a proxy in front, or use ``gthread``.
- ``-w N``: worker ``k`` keeps its threads on the ``k``-th CPU the process may use (modulo their
  number; ``minimcp.httpd.affinity``), so ``-w`` as many as the cores puts one interpreter on each.
- ``--threads``: the requests one loop runs at once (``WSGIServer``'s ``max_workers``; its threads
  start on demand). A request past them waits in the loop, holding no thread, until one comes free
  (``503`` after ``wait_timeout``); a GET event stream that finds all but an eighth of them busy
  is refused at once (``WSGIServer.stream_reserve``). A legacy MCP question holds its thread until
  the answer arrives on another request, and its client's GET stream holds one more: ``--threads``
  should be at least twice the app's ``max_workers`` plus an eighth, and the worker logs a warning
  naming the number as it starts when it is not (``minimcp.shared.call_workers``).
- ``--worker-connections``: the connections one loop keeps open (``max_connections``, at least
  ``--threads``); an idle keep-alive connection holds no thread, and at the bound the longest-idle
  one closes for a newcomer. No per-address cap: behind a proxy every connection comes from the proxy.
- ``--keep-alive``: how long a connection may idle between requests (and, as everywhere on this
  server, how long a client may stop reading a response); ``0`` answers every request with
  ``Connection: close``.
- ``--timeout``: the worker's main thread beats the heartbeat while its loops run (as gthread's,
  it proves the process alive, not that every request is quick).
- ``TERM`` (``HUP`` sends it to the old workers) and ``--max-requests``: stop accepting, let the
  running requests finish within ``--graceful-timeout``, then exit; 2 s before the end (half the
  timeout, if shorter) the legacy questions still waiting on a client fail with an error that
  says to call again, and the GET streams end (``minimcp.shared.process_stop``). ``INT`` and
  ``QUIT`` exit at once (gunicorn's own handlers).
- The server's log (``minimcp.httpd``) goes to gunicorn's error log, unless it is configured
  already; with an access log (``--access-logfile``), each response is logged there once sent,
  in ``--access-logformat``. Not honoured: the ``pre_request``/``post_request`` hooks, the
  ``--limit-request-*`` sizes (this server's own limits apply, see ``limits``) and the
  forwarded-headers settings.

gunicorn is an optional dependency (the ``gunicorn`` extra): only this module imports it.
"""

from __future__ import annotations

import itertools
import logging
import os
import select
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime
from typing import Any

from gunicorn.workers import base

from minimcp.httpd.connections import WSGIServer
from minimcp.httpd.limits import kept_for_answers

_App = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]

#: Seconds before ``--graceful-timeout`` ends at which a stopping worker answers the legacy
#: questions it holds with an error and ends its GET streams (``Worker._stop``).
ANSWER_BEFORE_EXIT = 2.0


class _ToLogger(logging.Handler):
    """Hands every record to ``target`` (gunicorn's error log), whose handlers USR1 reopens."""

    def __init__(self, target: logging.Logger) -> None:
        super().__init__()
        self.target = target

    def emit(self, record: logging.LogRecord) -> None:
        self.target.handle(record)


class Worker(base.Worker):
    """One gunicorn worker process: a ``WSGIServer`` loop per listener, each on a thread of its own,
    while the main thread beats the heartbeat and watches for the signal (or the request count) to
    stop. ``alive`` is set false by gunicorn's signal handlers and by the counting app; the
    handlers' wakeup pipe (``PIPE``) ends the main thread's wait at once."""

    @classmethod
    def check_config(cls, cfg: Any, log: Any) -> None:
        if cfg.is_ssl:
            raise RuntimeError("minimcp.httpd.gunicorn.Worker serves plain HTTP: terminate TLS at a proxy, "
                               "or use -k gthread")

    def init_process(self) -> None:
        for listener in self.sockets:
            if listener.sock.family not in (socket.AF_INET, socket.AF_INET6):
                raise RuntimeError(f"minimcp.httpd.gunicorn.Worker serves TCP listeners only, not {listener}: "
                                   "bind host:port, or use -k gthread")
        super().init_process()

    def run(self) -> None:
        self._log_through_gunicorn()
        self._check_threads()
        app = self._app()
        # Under --keep-alive 0 no connection idles (see _closing): the server's default bounds the sends.
        idle: dict[str, Any] = {"idle_timeout": float(self.cfg.keepalive)} if self.cfg.keepalive else {}
        # Worker k on the k-th CPU (gunicorn numbers its workers from 1, a replacement with the next number).
        servers = [WSGIServer(app, listener=listener.sock, max_workers=self.cfg.threads,
                              max_connections=max(self.cfg.threads, self.cfg.worker_connections),
                              max_connections_per_peer=None, cpu_index=self.age - 1,
                              shared_listener=self.cfg.workers > 1, **idle)
                   for listener in self.sockets]
        loops = [threading.Thread(target=server.serve_forever, name=f"minimcp-httpd {server.host}:{server.port}",
                                  daemon=True) for server in servers]
        for loop in loops:
            loop.start()
        tick = min(1.0, self.timeout or 1.0)  # half of --timeout (0: no heartbeat check)
        while self.alive:
            self.notify()
            if self.ppid != os.getppid():
                self.log.info("Parent changed, shutting down: %s", self)
                break
            if not all(loop.is_alive() for loop in loops):
                self.log.error("a server loop of %s ended; the worker exits", self)
                break
            self._wait(tick)
        self._stop(servers, tick)

    def _check_threads(self) -> None:
        """Say at start-up, once the app is loaded, when ``--threads`` cannot hold what its MCP
        servers' legacy clients may hold at once (``minimcp.shared.call_workers``): with too few,
        event streams are refused and a question's answer may find no thread to arrive on."""
        call_workers = sys.modules.get("minimcp.shared.call_workers")  # loaded with an MCP server, if any
        threads = self.cfg.threads
        kept = kept_for_answers(threads)
        needed = call_workers.threads_needed() if call_workers is not None else 0
        if needed and threads - kept < needed:
            enough = needed
            while enough - kept_for_answers(enough) < needed:
                enough += 1
            self.log.warning(
                "--threads %d is too few for this app's legacy MCP clients: its %d call workers (max_workers) "
                "each hold a thread while a question waits for the client's answer, each asking client holds "
                "one more for its GET stream, and an eighth of the threads are kept for the answers, so %d "
                "are needed; with fewer, GET streams are refused (503) and calls wait. Set --threads %d "
                "(threads start on demand: an idle one costs nothing), or lower max_workers",
                threads, needed // 2, enough, enough)

    def _wait(self, seconds: float) -> None:
        """Until a signal (or the counting app) writes to the wakeup pipe, or ``seconds`` pass."""
        readable, _, _ = select.select([self.PIPE[0]], [], [], seconds)
        if readable:
            try:
                while os.read(self.PIPE[0], 4096):
                    pass
            except BlockingIOError:
                pass

    def _stop(self, servers: list[WSGIServer], tick: float) -> None:
        """Stop accepting and let the running requests finish, for ``--graceful-timeout`` at most,
        beating the heartbeat meanwhile (the master kills the worker once that timeout passes anyway).

        ``ANSWER_BEFORE_EXIT`` seconds before the end (half the timeout, when that is shorter) the
        process stops serving (``process_stop``): its legacy questions, which only a client can
        end, fail with a clear error their calls still send, and its GET streams end, so that the
        requests left finish and no client learns of the exit only from a lost heartbeat."""
        grace = float(self.cfg.graceful_timeout)
        stoppers = [threading.Thread(target=server.shutdown, args=(grace,), kwargs={"drain": True},
                                     name="minimcp-httpd shutdown", daemon=True) for server in servers]
        for stopper in stoppers:
            stopper.start()
        deadline = time.monotonic() + grace
        answer_at = deadline - min(ANSWER_BEFORE_EXIT, grace / 2)
        for stopper in stoppers:
            while stopper.is_alive() and time.monotonic() < deadline:
                self.notify()
                if time.monotonic() >= answer_at:
                    _stop_serving()
                    answer_at = deadline  # once
                until = answer_at if answer_at < deadline else deadline
                stopper.join(min(tick, max(0.0, until - time.monotonic())))
        _stop_serving()

    def _app(self) -> _App:
        """The WSGI app as the settings ask: counted for ``--max-requests``, every response
        announcing ``Connection: close`` under ``--keep-alive 0``, and logged when there is an
        access log (the app as it is otherwise: nothing is added to a request's path for nothing)."""
        app: _App = self.wsgi
        if not self.cfg.keepalive:
            app = _closing(app)
        if getattr(self.log, "access_log_enabled", self.cfg.accesslog):
            app = _logged(app, self.log)
        if self.cfg.max_requests > 0:
            app = self._counted(app)
        return app

    def _counted(self, app: _App) -> _App:
        """``app``, stopping the worker gracefully once it has taken ``max_requests`` requests (the
        count is a C iterator: exact under threads, and the limit is met by one request only)."""
        count = itertools.count(1)
        limit = self.max_requests

        def counted(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
            self.nr = number = next(count)
            if number == limit:
                self.log.info("Autorestarting worker after current request.")
                self.alive = False
                os.write(self.PIPE[1], b".")
            return app(environ, start_response)

        return counted

    def _log_through_gunicorn(self) -> None:
        """The server's log into gunicorn's error log, at its level, unless a log configuration
        (``--log-config``) has given it handlers of its own."""
        httpd_log = logging.getLogger("minimcp.httpd")
        if httpd_log.handlers:
            return
        error_log: logging.Logger | None = getattr(self.log, "error_log", None)  # a --logger-class may lack it
        if error_log is None:
            return
        httpd_log.addHandler(_ToLogger(error_log))
        httpd_log.setLevel(error_log.getEffectiveLevel())
        httpd_log.propagate = False


def _stop_serving() -> None:
    """Have what the app's MCP servers hold answer now (``minimcp.shared.process_stop``), when an
    app loaded them: the worker class itself imports nothing of MCP."""
    process_stop = sys.modules.get("minimcp.shared.process_stop")
    if process_stop is not None:
        process_stop.stop_serving()


def _closing(app: _App) -> _App:
    """``app`` with ``Connection: close`` on every response, which this server honours."""

    def closing(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        def start(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
            return start_response(status, [*headers, ("Connection", "close")], exc_info)

        return app(environ, start)

    return closing


def _logged(app: _App, log: Any) -> _App:
    """``app`` with each response written to gunicorn's access log once the server closes it."""

    def logged(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        response = _Logged(log, environ, start_response)
        response.body = app(environ, response.start_response)
        return response

    return logged


class _Logged:
    """One response as gunicorn's access log reads it (``status``, ``headers``, ``sent``): the
    app's status and headers, and the body bytes it yielded, counted as the server sends them."""

    def __init__(self, log: Any, environ: dict[str, Any], start_response: Callable[..., Any]) -> None:
        self._log = log
        self._environ = environ
        self._start_response = start_response
        self._started = datetime.now()
        self.status = "500 Internal Server Error"
        self.headers: list[tuple[str, str]] = []
        self.sent = 0
        self.body: Iterable[bytes] = ()

    def start_response(self, status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Callable[..., Any]:
        self.status, self.headers = status, headers
        return self._start_response(status, headers, exc_info)

    def __iter__(self) -> Iterator[bytes]:
        for chunk in self.body:
            self.sent += len(chunk)
            yield chunk

    def close(self) -> None:
        try:
            close = getattr(self.body, "close", None)
            if close is not None:
                close()
        finally:
            environ = self._environ
            query = environ.get("QUERY_STRING")
            target = environ.get("SCRIPT_NAME", "") + environ.get("PATH_INFO", "") + (f"?{query}" if query else "")
            headers = [(name[5:].replace("_", "-"), value) for name, value in environ.items()
                       if name.startswith("HTTP_")]
            self._log.access(self, headers, {"RAW_URI": target, **environ}, datetime.now() - self._started)
