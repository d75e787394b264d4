"""The same call in both protocol eras: the client's callback answers the server's question."""

from typing import Any

from elicitation_server import mcp, sent

from minimcp import Client
from minimcp.types import ElicitResult


def answer(context: Any, params: Any) -> ElicitResult:
    """What a user would type into the form the server sent."""
    print("asked:", params.message)
    return ElicitResult(action="accept", content={"email": "ada@example.com", "copy_to_me": True})


for mode in ("legacy", "auto"):
    with Client(mcp, mode=mode, elicitation_callback=answer) as client:
        result = client.call_tool("send_invoice", {"invoice_id": 42})
        print(client.protocol_version, result.content[0].text)
print("emails sent:", sent)
