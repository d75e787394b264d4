"""Where minimcp configures logging: only in ``run()``, where it owns the process, and only when the
root logger has no handler yet. ``MCPServer()`` itself leaves logging alone, unlike the official
SDK 2.3.0, whose constructor calls ``logging.basicConfig`` (with rich's handler when installed): in
a host application that sets up its own logging after building the server, every line would print
twice. Each test runs a fresh interpreter, since pytest's own handlers sit on this one's root logger."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from minimcp import Client, StdioServerParameters
from minimcp.client.stdio import stdio_client

WAIT = 30

SERVER = """
from minimcp.server.mcpserver import MCPServer

mcp = MCPServer("host")


@mcp.tool()
def explode() -> str:
    raise RuntimeError("the boiler blew")
"""


def _python(script: str, stdin: str = "") -> str:
    """``script`` in a fresh interpreter; what it wrote on stdout and stderr together."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], input=stdin, capture_output=True,
                          text=True, timeout=WAIT, check=True)
    return done.stdout + done.stderr


def test_a_host_that_sets_up_logging_after_building_the_server_logs_a_tool_error_once() -> None:
    output = _python(SERVER + """
import logging
import sys

from minimcp import Client

logging.getLogger().addHandler(logging.StreamHandler(sys.stdout))  # the host's own setup, after the import
with Client(mcp) as client:
    print("answered:", client.call_tool("explode", {}).is_error)
""")
    assert "answered: True" in output
    assert output.count("RuntimeError: the boiler blew") == 1


def test_run_sends_a_tool_error_to_stderr_when_nothing_else_was_set_up(tmp_path: Path) -> None:
    script = tmp_path / "server.py"
    script.write_text(SERVER + "\nmcp.run()\n")
    with (tmp_path / "stderr.txt").open("w+") as errlog:
        with Client(stdio_client(StdioServerParameters(command=sys.executable, args=[str(script)]), errlog),
                    mode="legacy") as client:
            assert client.call_tool("explode", {}).is_error
        errlog.seek(0)
        errors = errlog.read()
    assert errors.count("RuntimeError: the boiler blew") == 1
    assert "Traceback" in errors
