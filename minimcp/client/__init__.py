"""The MCP client: ``Client`` for everyday use, ``ClientSession`` and transports underneath.

    from minimcp import Client

    with Client("http://127.0.0.1:8000/mcp") as client:
        print(client.call_tool("add", {"a": 1, "b": 2}).content)

``Client(mcp)`` talks to a server object in this process, ``Client("http://...")`` over Streamable
HTTP, ``Client(StdioServerParameters(command=...))`` to a subprocess; anything else is used as a
:class:`Transport`.
"""

from minimcp.client.cancel import CallCancelled, CancelScope
from minimcp.client.client import Client, InputRequiredRoundsExceededError
from minimcp.client.extension import ClientExtension, NotificationBinding, advertise
from minimcp.client.session import ClientRequestContext, ClientSession, IncomingMessage
from minimcp.client.tasks import TaskCancelledError, TaskHandle
from minimcp.client.terminal import TerminalElicitation, terminal_elicitation
from minimcp.client.transports import Transport

__all__ = [
    "CallCancelled",
    "CancelScope",
    "Client",
    "ClientExtension",
    "ClientRequestContext",
    "ClientSession",
    "IncomingMessage",
    "InputRequiredRoundsExceededError",
    "NotificationBinding",
    "TaskCancelledError",
    "TaskHandle",
    "TerminalElicitation",
    "Transport",
    "advertise",
    "terminal_elicitation",
]
