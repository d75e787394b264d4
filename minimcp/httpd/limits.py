"""The HTTP server's limits and tunables, and the status lines it answers with on its own.

One place for every number that bounds what a client may make the server hold (bytes, fields,
connections, seconds), so that the parser, the WSGI bridge and the connection loop agree.
"""

from __future__ import annotations

MAX_LINE = 8192
MAX_HEAD = 64 * 1024
MAX_HEADERS = 100
#: Empty lines skipped before a request line (RFC 9112 §2.2: a server SHOULD ignore at least one).
MAX_EMPTY_LINES = 8
#: An unread request body up to this size is skipped so the connection can carry the next request;
#: a larger one closes the connection instead.
MAX_DRAIN = 64 * 1024
#: How long, in total, a closing connection keeps reading what the client still sends.
LINGER = 2.0
#: Closing connections lingering at once; past it a connection closes without the lingering read.
MAX_LINGERING = 1024
#: Seconds a refused client is told to wait (``Retry-After``).
RETRY_AFTER = 1
#: How often, at most, a recurring event (a refusal, a shortage) is logged.
LOG_INTERVAL = 10.0
#: How long a worker that answered a request waits for the next one on the same connection before
#: handing the connection to the selector: a client sending requests back to back (an MCP client
#: in a session) then costs no handoff between threads, and an idle connection holds a thread no
#: longer. Only from a connection's second request on, so that many connections of one request
#: each (a flood, or short-lived clients) do not hold a thread each for the grace.
KEEP_ALIVE_GRACE = 0.05
#: How long accepting pauses when not even the reserved descriptor can be had back.
ACCEPT_PAUSE = 0.1
#: Connections accepted per wake of the loop, so a flood of them does not starve the others.
ACCEPT_BATCH = 64
#: Seconds a fully busy process sharing its listener with others waits before it accepts, so that
#: an idler one takes the connection (``WSGIServer._yield_to_siblings``; scaled by its load).
SIBLING_YIELD = 0.02
#: Bytes asked of a socket per read.
RECV_SIZE = 65536
#: How long an idle worker thread waits for a next job before it ends.
WORKER_IDLE = 60.0
def kept_for_answers(threads: int) -> int:
    """The threads of ``threads`` that event streams may not take (an eighth): a legacy MCP
    question holds one thread until its answer arrives on another, so a server whose every thread
    held a stream or a question would leave the answers none."""
    return threads // 8


#: The status lines the server sends without the app.
STATUS = {400: "400 Bad Request", 408: "408 Request Timeout", 414: "414 URI Too Long",
          417: "417 Expectation Failed", 431: "431 Request Header Fields Too Large",
          500: "500 Internal Server Error", 503: "503 Service Unavailable", 505: "505 HTTP Version Not Supported"}
