"""The HTTP server is a general WSGI server: importing it loads nothing of MCP (issue 27)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from conftest import ROOT


@pytest.mark.parametrize(("module", "part"), [("minimcp.httpd", "minimcp.httpd.connections"),
                                              ("minimcp.httpd.gunicorn", "minimcp.httpd.gunicorn")])
def test_importing_the_http_server_loads_no_mcp_module(module: str, part: str) -> None:
    """The server, and its gunicorn worker class (which gunicorn imports in each worker process)."""
    probe = (f"import json, sys; import {module}; "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('minimcp'))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    loaded = json.loads(out.stdout)
    assert part in loaded
    # minimcp.thread_pool is the worker pool the server shares with the MCP core (standard library only);
    # minimcp._version is the package's version string, which the package root reads
    shared = ("minimcp", "minimcp._version", "minimcp.thread_pool")
    assert [m for m in loaded if m not in shared and not m.startswith("minimcp.httpd")] == []
