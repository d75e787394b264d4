"""The layering the core promises: importing it costs no transport, and threads live in one module.

``minimcp.server.lowlevel`` is the sans-I/O core; ``Server.run()``, ``wsgi_app()`` and
``in_memory_endpoint()`` reach the transports through ``minimcp.server.runner`` only when called.
A program that builds a server to serve one way (a custom entry with ``serve_one``, a test
in memory) pays neither for werkzeug nor for the HTTP server.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import minimcp.server.lowlevel
import minimcp.shared

TRANSPORTS = ["minimcp.server.stdio", "minimcp.server.wsgi", "minimcp.server.edges.memory", "minimcp.httpd",
              "minimcp.server.runner", "minimcp.server.streamable_http", "werkzeug"]
LOWLEVEL = Path(minimcp.server.lowlevel.__file__).parent


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``statement``."""
    program = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(out.stdout))


def test_importing_the_core_imports_no_transport() -> None:
    loaded = _loaded_after("import minimcp.server.lowlevel")
    assert "minimcp.server.lowlevel.server" in loaded
    assert [name for name in TRANSPORTS if name in loaded] == []


def test_building_a_server_imports_no_transport_until_it_serves() -> None:
    loaded = _loaded_after("from minimcp.server import MCPServer\nmcp = MCPServer('quiet')\nmcp.tool()(len)")
    assert [name for name in TRANSPORTS if name in loaded] == []
    served = _loaded_after("from minimcp.server import MCPServer\nMCPServer('served').wsgi_app()")
    assert {"minimcp.server.runner", "minimcp.server.wsgi", "werkzeug"} <= served


def test_only_the_workers_module_of_the_core_imports_threads_queues_or_clocks() -> None:
    importers = {}
    for path in sorted(LOWLEVEL.glob("*.py")):
        modules = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                modules.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                modules.add(node.module)
        found = modules & {"threading", "queue", "time", "_thread"}
        if found:
            importers[path.name] = sorted(found)
    assert importers == {"workers.py": ["queue", "threading", "time"]}


def test_what_both_sides_share_imports_neither_side() -> None:
    shared = Path(minimcp.shared.__file__).parent
    modules = ", ".join(f"minimcp.shared.{path.stem}" for path in sorted(shared.glob("*.py")) if path.stem != "__init__")
    loaded = _loaded_after(f"import {modules}")
    assert "minimcp.shared.inbound" in loaded
    assert sorted(name for name in loaded if name.startswith(("minimcp.server", "minimcp.client"))) == []


def test_the_sans_io_exchange_imports_no_wsgi_server_or_framework() -> None:
    loaded = _loaded_after("import minimcp.server.edges.http.exchange")
    assert [name for name in ("minimcp.server.wsgi", "minimcp.httpd", "werkzeug", "flask", "django")
            if name in loaded] == []
