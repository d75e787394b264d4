"""The process stops serving: what still holds a client's call answers it before the process exits.

A server process that stops (a gunicorn worker told to stop by ``TERM``, ``HUP`` or
``--max-requests``, or any program whose main thread ends) may still hold legacy questions, whose
workers wait on a client's answer, and standalone GET streams, which never end on their own. Cut
with the process, they leave the client waiting for a heartbeat to expire; held open, they keep the
process alive past its graceful timeout (a threaded server joins its request threads at exit).
So whoever holds them registers here (``on_stop``), and ``stop_serving`` has each of them answer
now: a question fails with a clear error the call carries to its client, and a stream ends, its
client opening it again (on another process, when there is one).

``stop_serving`` is called by minimcp's gunicorn worker class shortly before its graceful timeout
ends, and as the interpreter exits, before it joins the request threads (gunicorn's ``gthread``
after its graceful timeout). A program of its own may call it where it starts to stop.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from typing import Callable

__all__ = ["on_stop", "stop_serving"]

logger = logging.getLogger("minimcp.server")

#: How often the watcher looks whether the main thread has ended (seconds).
WATCH_EVERY = 0.2

# _lock guards _hooks, _stopped and _watcher_pid: what to call, whether it was called in this
# process, and which process is watched for its exit (a forked child is watched anew).
_lock = threading.Lock()
_hooks: dict[object, weakref.WeakMethod[Callable[[], None]]] = {}
_stopped: int | None = None  # the pid that stopped serving
_watcher_pid: int | None = None


def on_stop(hook: Callable[[], None]) -> Callable[[], None]:
    """Call the bound method ``hook`` once, when this process stops serving; the function returned
    forgets it (the object's ``close``). Held weakly: a server dropped unclosed is forgotten too."""
    token = object()
    with _lock:
        _hooks[token] = weakref.WeakMethod(hook)
        _watched()

    def forget() -> None:
        with _lock:
            _hooks.pop(token, None)

    return forget


def stop_serving() -> None:
    """Have every registered holder answer what it holds now; once per process, later calls do nothing."""
    global _stopped
    with _lock:
        if _stopped == os.getpid():
            return
        _stopped = os.getpid()
        hooks = [hook() for hook in _hooks.values()]
    for hook in hooks:
        if hook is None:
            continue
        try:
            hook()
        except Exception:  # one holder failing must not keep the others' clients waiting
            logger.exception("answering what the process holds before it stops failed")


def _watched() -> None:
    """Have this process stop serving as its interpreter exits, before it joins the request threads
    (caller holds ``_lock``). CPython's ``threading._register_atexit`` runs a function at that very
    point, latest registered first, so before ``concurrent.futures`` (which gunicorn's gthread runs
    its requests on) joins its threads; an interpreter without it gets a thread that waits for the
    main thread to end."""
    global _watcher_pid
    if _watcher_pid == os.getpid():
        return
    _watcher_pid = os.getpid()
    register = getattr(threading, "_register_atexit", None)
    if register is None:
        threading.Thread(target=_watch, name="minimcp-process-stop", daemon=True).start()
        return
    try:
        register(stop_serving)
    except RuntimeError:  # the interpreter is exiting already: nothing will be served any more
        pass


def _watch() -> None:
    """Wait for the main thread to end, then stop serving."""
    main = threading.main_thread()
    while main.is_alive():
        time.sleep(WATCH_EVERY)
    stop_serving()
