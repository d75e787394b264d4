"""The layering the server promises: the core imports nothing above it, no import cycle is larger
than a few modules, and threads live in one module.

``minimcp.server.core`` (served at ``minimcp.server.lowlevel``) is the sans-I/O core: it loads no
decorator tier, backend, transport or authorization; ``Server.run()``, ``wsgi_app()`` and
``in_memory_endpoint()`` reach the transports through ``minimcp.server.edges.runner`` only when
called. A program that builds a server to serve one way (a custom entry with ``serve_one``, a test
in memory) pays neither for werkzeug nor for the HTTP server.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import minimcp
import minimcp.server.core
import minimcp.shared

TRANSPORTS = ["minimcp.server.edges", "minimcp.server.stdio", "minimcp.server.wsgi", "minimcp.server.memory",
              "minimcp.httpd", "minimcp.server.runner", "minimcp.server.streamable_http", "werkzeug"]
#: What the core must not load: the layers above it, the faces that re-export them, the hosts.
ABOVE_THE_CORE = ["minimcp.server.app", "minimcp.server.backends", "minimcp.server.auth", "minimcp.server.mcpserver",
                  "minimcp.server.tasks", "minimcp.server.openapi", "minimcp.hosts", *TRANSPORTS]
CORE = Path(minimcp.server.core.__file__).parent
ROOT = Path(minimcp.__file__).parent.parent
#: The most modules one import cycle may hold (module-level, function-level and TYPE_CHECKING imports).
LARGEST_CYCLE = 5


def _loaded_after(statement: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``statement``."""
    program = f"import json, sys\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, timeout=60)
    return set(json.loads(out.stdout))


def _within(loaded: set[str], packages: list[str]) -> list[str]:
    return sorted(name for name in loaded if any(name == package or name.startswith(package + ".")
                                                 for package in packages))


def test_importing_the_core_imports_nothing_above_it() -> None:
    for statement in ("import minimcp.server.core", "import minimcp.server.lowlevel",
                      "from minimcp.server.lowlevel import Server\nServer('quiet')"):
        loaded = _loaded_after(statement)
        assert _within(loaded, ABOVE_THE_CORE) == [], statement
    assert "minimcp.server.core.server" in _loaded_after("import minimcp.server.lowlevel")


def test_building_a_server_imports_no_transport_until_it_serves() -> None:
    loaded = _loaded_after("from minimcp.server import MCPServer\nmcp = MCPServer('quiet')\nmcp.tool()(len)")
    assert _within(loaded, TRANSPORTS) == []
    served = _loaded_after("from minimcp.server import MCPServer\nMCPServer('served').wsgi_app()")
    assert {"minimcp.server.edges.runner", "minimcp.server.edges.wsgi", "werkzeug"} <= served


def test_only_the_workers_module_of_the_core_imports_threads_queues_or_clocks() -> None:
    importers = {}
    for path in sorted(CORE.glob("*.py")):
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


def _import_graph() -> dict[str, set[str]]:
    """minimcp's own modules, each with the minimcp modules it imports anywhere: at the top, inside
    a function, or under ``TYPE_CHECKING`` (each is a dependency a reader follows). ``from a.b import
    c`` names the module ``a.b.c`` when there is one, else ``a.b``; the packages around a module
    imported are not counted."""
    modules: dict[str, tuple[Path, bool]] = {}
    for path in (ROOT / "minimcp").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts[-1] == "__init__"
        modules[".".join(parts[:-1] if package else parts)] = (path, package)

    def known(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for name, (path, package) in modules.items():
        base = name if package else name.rpartition(".")[0]
        imported: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                start = ".".join(base.split(".")[:len(base.split(".")) - node.level + 1]) if node.level else ""
                source = ".".join(part for part in (start, node.module or "") if part)
                imported.update(f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source
                                for alias in node.names)
        graph[name] = {found for each in imported if each.startswith("minimcp")
                       if (found := known(each)) is not None and found != name}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected sets of more than one module (Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    members = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        members.append(member)
                        if member == node:
                            break
                    if len(members) > 1:
                        found.append(sorted(members))
    return found


def test_no_import_cycle_holds_more_than_a_few_modules() -> None:
    graph = _import_graph()
    assert {"minimcp.server.core.server", "minimcp.server.core.dispatch"} <= graph.keys()
    assert "minimcp.server.core.in_process" in graph["minimcp.server.core.server"]
    too_large = [cycle for cycle in _cycles(graph) if len(cycle) > LARGEST_CYCLE]
    assert too_large == []


#: The most files one 2026-07-28 ``tools/call`` through the WSGI app may enter, and re-enter.
WALK_FILES, WALK_REENTRIES = 20, 15


def test_one_tool_call_walks_through_few_files_each_once_or_nearly() -> None:
    """The road of one call (``benchmarks/walk.py``, a profiler hook on every thread) stays a road:
    the edge, the core and the tier each entered in turn, not a hub that calls back up."""
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "walk.py"), "--tool", "both"],
                         capture_output=True, text=True, check=True, timeout=120).stdout
    walks = {line.split(":")[0]: [int(word) for word in line.split() if word.isdigit()]
             for line in out.splitlines() if line and not line.startswith(" ")}
    assert set(walks) == {"echo", "greet"}
    for tool, (files, visits, reentries) in walks.items():
        assert visits == files + reentries
        assert files <= WALK_FILES and reentries <= WALK_REENTRIES, f"{tool}: {files} files, {reentries} re-entries"
