"""The HTTP server is a general WSGI server: importing it loads nothing of MCP (issue 27)."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import ROOT


def test_importing_the_http_server_loads_no_mcp_module() -> None:
    probe = ("import json, sys; import minimcp.httpd; "
             "print(json.dumps(sorted(m for m in sys.modules if m.startswith('minimcp'))))")
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    loaded = json.loads(out.stdout)
    assert "minimcp.httpd.connections" in loaded
    assert [m for m in loaded if m != "minimcp" and not m.startswith("minimcp.httpd")] == []
