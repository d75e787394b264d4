"""The official SDK's client session shape, without async: stdio_client, then ClientSession."""

import sys
from pathlib import Path

from minimcp import ClientSession, StdioServerParameters, stdio_client

server = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("ported_server.py"))])


def main() -> None:
    with stdio_client(server) as (read, write):
        with ClientSession(read, write) as session:
            session.initialize()
            print(session.call_tool("add", {"a": 1, "b": 2}).structured_content)


if __name__ == "__main__":
    main()
