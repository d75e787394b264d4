"""A gateway: one server over HTTP and one started over stdio, served as one.

    python proxy_gateway.py http://127.0.0.1:8000/mcp python notes_server.py
"""

import sys

from minimcp import create_proxy

url, *command = sys.argv[1:]
proxy = create_proxy({"mcpServers": {
    "web": {"url": url, "timeout": 30},  # its tools are web_<name>, its notes://x is notes://web/x
    "local": {"command": command[0], "args": command[1:]},  # and these local_<name>, notes://local/x
}})

if __name__ == "__main__":
    proxy.run()  # stdio; proxy.run("streamable-http") or proxy.wsgi_app() for HTTP
