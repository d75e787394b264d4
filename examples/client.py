"""The seed page's client, made synchronous: one callback answers both form and URL questions.

Start ``examples/bistro_server.py`` first, then run ``python examples/client.py [URL] [TOOL]``.
"""

import sys

from minimcp import Client
from minimcp.client import ClientRequestContext
from minimcp.types import ElicitRequestParams, ElicitRequestURLParams, ElicitResult


def handle_elicitation(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    if isinstance(params, ElicitRequestURLParams):
        print(f"Open this link to continue: {params.url}")
        return ElicitResult(action="accept")
    print(params.message)
    return ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-27"})


def main() -> None:
    url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"
    with Client(
        url,
        mode="legacy",
        elicitation_callback=handle_elicitation,
    ) as client:
        if len(sys.argv) > 2 and sys.argv[2] == "pay_deposit":
            result = client.call_tool("pay_deposit", {"booking_id": "42"})
        else:
            result = client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2})
        print(result.content)


if __name__ == "__main__":
    main()
