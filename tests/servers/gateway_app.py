"""A gateway for the multi-process tests: ``gunicorn -w N gateway_app:app``.

Two entries over the one upstream ``MINIMCP_TEST_UPSTREAM`` names (an HTTP URL), spoken to in
either era: ``old_<tool>`` legacy, ``new_<tool>`` 2026-07-28. ``MINIMCP_TEST_BACKEND`` (a Redis URL)
is the gateway's ``backend=``, shared by its worker processes; its own ``pid`` tool says which
process answered.
"""

import os

from minimcp import create_proxy

upstream = os.environ["MINIMCP_TEST_UPSTREAM"]
mcp = create_proxy({"mcpServers": {"old": {"url": upstream, "mode": "legacy"}, "new": {"url": upstream}}},
                   backend=os.environ.get("MINIMCP_TEST_BACKEND") or None)


@mcp.tool()
def pid() -> int:
    return os.getpid()


app = mcp.wsgi_app(keepalive_interval=1.0)
