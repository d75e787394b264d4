"""The core: the MCP protocol without I/O, one message in, outgoing messages out.

Rule: nothing here opens a socket, reads a WSGI environ, starts a process or knows a decorator;
it imports only ``minimcp.types``, ``minimcp.jsonrpc``, ``minimcp.shared`` and ``minimcp.thread_pool``
(``tests/test_layers.py``). What it needs from the layers around it, it declares as ports they
implement (``ports``): the ``Planner``, which tells it once what a request is, and the stores of
``ports``. Threads, queues, blocking waits and clocks live in ``workers`` alone.

- ``server``: the low-level ``Server`` (a handler per method, capabilities, lifespan, pool);
- ``plan``: ``Plan``, what one request is (``HookPlanner``, a bare server's planner);
- ``dispatch``: a message through the middleware to its handler, by the method table and the plan;
- ``era``: every rule that differs between the legacy and the 2026-07-28 eras;
- ``questions``, ``rounds``, ``pending``: how a handler's question reaches the client, in each era;
- ``sessions``, ``shared_sessions``, ``peer``: who the client is, and its calls in flight;
- ``outbox``, ``listens``, ``shares``, ``workers``, ``context``, ``caching``.
"""
