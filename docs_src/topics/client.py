"""Book a table at the Bistro (examples/bistro_server.py, served by ``python bistro_server.py``),
answering its question in the terminal. Another server's URL may be given as the first argument."""

import sys

from minimcp import Client
from minimcp.client import terminal_elicitation

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"

with Client(url, elicitation_callback=terminal_elicitation) as client:
    print(client.call_tool("book_table", {"date": "2025-12-25", "party_size": 2}).content[0].text)
