"""A user's type checker sees minimcp's hints.

minimcp is installed from this checkout as a user installs it, into a folder of its own (built from
a copy of its sources, so the checkout gets no ``build/``), and mypy checks a user's file against
that copy: the package must carry ``py.typed`` (PEP 561, without which mypy does not read an
installed package at all), and the elicitation page's server and the README's first example must
check as they are written, their ``mcp = MCPServer(...)`` included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

#: The elicitation page's server and a client of it, in the synchronous edition.
USER_FILE = '''
from pydantic import BaseModel

from minimcp import Client
from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context

mcp = MCPServer("Booking")


class Alternative(BaseModel):
    check_alternative: bool


@mcp.tool()
def book_table(date: str, ctx: Context) -> str:
    result = ctx.elicit(message=f"No tables on {date}. Another date?", schema=Alternative)
    if result.action == "accept" and result.data:
        return "booked" if result.data.check_alternative else "no other date"
    return "cancelled"


app = mcp.wsgi_app()


def book(url: str) -> None:
    with Client(url, mode="legacy") as client:
        client.call_tool("book_table", {"date": "2024-12-25"})
'''


def _installed(tmp_path: Path) -> Path:
    """minimcp installed (not editable) from a copy of this checkout; the folder it is in."""
    source = tmp_path / "source"
    source.mkdir()
    for name in ("setup.cfg", "pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, source / name)
    shutil.copytree(ROOT / "minimcp", source / "minimcp", ignore=shutil.ignore_patterns("__pycache__"))
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(source)],
        capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    return site


def test_an_installed_minimcp_is_typed_and_its_examples_check_as_written(tmp_path: Path) -> None:
    site = _installed(tmp_path)
    assert (site / "minimcp" / "py.typed").is_file()
    users = tmp_path / "users"
    users.mkdir()
    (users / "booking.py").write_text(USER_FILE)
    readme_first = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    assert readme_first is not None
    (users / "bistro.py").write_text(readme_first[1])
    checked = subprocess.run(
        [sys.executable, "-m", "mypy", "--follow-imports=silent", "--python-version", "3.10",
         "--cache-dir", str(tmp_path / "mypy-cache"), str(users / "booking.py"), str(users / "bistro.py")],
        cwd=tmp_path, env={**os.environ, "MYPYPATH": str(site)}, capture_output=True, text=True, timeout=600)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert "Success: no issues found in 2 source files" in checked.stdout
