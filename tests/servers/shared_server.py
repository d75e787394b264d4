"""A server for the multi-process tests: ``gunicorn shared_server:app`` or ``python shared_server.py``.

``MINIMCP_TEST_BACKEND`` (a Redis URL) is its ``backend=``; without it the server keeps everything
in its process, as by default. ``MINIMCP_TEST_REDIS_CLIENT`` (JSON: ``redis.Redis.from_url``'s
options) makes it ``RedisBackend(client)`` with a client of the user's own making instead. No
request-state key is configured: with a backend the keys come from it.
Run as a program it listens on a port the system picks and announces its URL once it accepts;
``MINIMCP_TEST_PIN_CPU=0`` then lets its threads run on any CPU (``mcp.run(pin_cpu=False)``).
"""

import json
import os
import time

from pydantic import BaseModel

from minimcp.server import MCPServer
from minimcp import types
from minimcp.server.mcpserver import Context


def _backend() -> object:
    url = os.environ.get("MINIMCP_TEST_BACKEND") or None
    options = os.environ.get("MINIMCP_TEST_REDIS_CLIENT")
    if url is None or options is None:
        return url
    import redis

    from minimcp.server.backends import RedisBackend

    return RedisBackend(redis.Redis.from_url(url, **json.loads(options)))


mcp = MCPServer("Shared", backend=_backend())


#: The ``hang`` calls that stopped on a cancel, in this process.
CANCELLED = [0]


class Ok(BaseModel):
    ok: bool


@mcp.tool()
def confirm(door: str, ctx: Context) -> str:
    """Ask one question; the answer may arrive on any process."""
    answer = ctx.elicit(f"Open {door}?", schema=Ok)
    return f"{door}: {answer.action} {answer.data.ok if answer.data else None}"


@mcp.tool()
def confirm_here(door: str, ctx: Context) -> str:
    """Ask one question that names the process asking it (``pid N``), so a test can stop that one."""
    answer = ctx.elicit(f"pid {os.getpid()}: open {door}?", schema=Ok)
    return f"{door}: {answer.action}"


@mcp.tool()
def pid() -> int:
    return os.getpid()


@mcp.tool()
def cpus() -> list[int]:
    """The CPUs the thread running this call may use (a call that can send nothing runs on the HTTP
    server's own thread)."""
    return sorted(os.sched_getaffinity(0))


@mcp.tool()
def cpus_on_a_worker(ctx: Context) -> list[int]:
    """As ``cpus``, from a call that could ask the client something: on a legacy session it runs on
    a thread of the server's worker pool."""
    return sorted(os.sched_getaffinity(0))


@mcp.tool()
def touch(uri: str, ctx: Context) -> str:
    """Announce that ``uri`` changed, to every listener of every process."""
    ctx.notify_resource_updated(uri)
    return f"touched {uri} on {os.getpid()}"


@mcp.tool()
def sample_with_progress(ctx: Context) -> str:
    """Ask for a sample and report the progress the client sent against it, wherever it was posted."""
    heard: list[tuple[float, float | None, str | None]] = []
    request = types.CreateMessageRequest(params=types.CreateMessageRequestParams(
        messages=[types.SamplingMessage(role="user", content=types.TextContent(type="text", text="hi"))],
        max_tokens=5))
    result = ctx.session.send_request(request, types.CreateMessageResult, progress_callback=lambda *p: heard.append(p),
                                      related_request_id=ctx.request_id)
    return f"{result.content.text} {heard}"


@mcp.tool()
def close_standalone(ctx: Context) -> str:
    """End the session's standalone GET stream, on whichever process holds it."""
    ctx.close_standalone_sse_stream()
    return f"closed from {os.getpid()}"


@mcp.tool()
def hang(seconds: float, ctx: Context) -> str:
    """A call that runs until cancelled (or ``seconds``): it outlives its process when the test kills it."""
    ctx.info(f"pid {os.getpid()}")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and not ctx.cancelled:
        time.sleep(0.05)
    if ctx.cancelled:
        CANCELLED[0] += 1
        return "cancelled"
    return "slept"


@mcp.tool()
def cancelled_calls() -> int:
    """How many ``hang`` calls of this process saw their cancel (each process counts its own)."""
    return CANCELLED[0]


@mcp.tool()
def chapters(ctx: Context) -> str:
    """Tell one chapter, end the response stream, then tell another: a client resumes for the rest."""
    ctx.info("chapter 1")
    ctx.close_sse_stream()
    time.sleep(1.0)
    ctx.info("chapter 2")
    return "the end"


@mcp.tool(task=True)
def add_later(a: int, b: int) -> str:
    """A task: created on one process, polled on any."""
    return str(a + b)


@mcp.resource("note://{name}")
def note(name: str) -> str:
    return f"note {name}"


@mcp.tool(task=True)
def endless_task(tag: str) -> str:
    """A task that runs until its process stops; it says which process runs it on the Redis list ``tag``."""
    import redis

    redis.Redis.from_url(os.environ["MINIMCP_TEST_BACKEND"]).rpush(tag, os.getpid())
    time.sleep(3600)
    return "never"


#: The caller is whoever the ``X-Test-User`` header names: sessions are bound to it on every process.
app = mcp.wsgi_app(keepalive_interval=1.0, principal=lambda environ: environ.get("HTTP_X_TEST_USER"))

if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=0, keepalive_interval=1.0,
            principal=lambda environ: environ.get("HTTP_X_TEST_USER"),
            pin_cpu=os.environ.get("MINIMCP_TEST_PIN_CPU", "1") != "0")
