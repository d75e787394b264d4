"""``browser_login`` with a real browser: headless Chromium against ``examples/oauth_server.py``.

The example's server runs as its own process (``servers/oauth_example.py``). Chromium is the user's browser: the user signs in on the
example's page (``demo``), and Chromium follows the authorization server's redirect to the
one-shot loopback server ``browser_login`` listens on. Then the client calls tools, and a tool that needs
more scope sends the user through the browser once more (step-up). Last, ``examples/oauth_client.py``
runs as a user would run it, its ``webbrowser.open`` pointed (``BROWSER=``) at a stand-in browser.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from browser_support import Chromium, SiteUser
from conftest import run_server_process

from minimcp import Client
from minimcp.client.auth import browser_login

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "oauth_server.py"
#: The example's server on a port of the system's choosing (the example itself takes its port as an argument).
SERVER = Path(__file__).resolve().parent / "servers" / "oauth_example.py"


@pytest.fixture
def oauth_example() -> Iterator[str]:
    for base in run_server_process([sys.executable, str(SERVER)]):
        yield f"{base}/mcp"


def test_headless_chromium_logs_in_consents_and_steps_up(oauth_example: str, chromium: Chromium) -> None:
    user = SiteUser(chromium, "demo", "demo", decision=None)  # the example's login page is its consent
    provider = browser_login(oauth_example, open_browser=user, timeout=120)
    try:
        with Client(oauth_example, auth=provider) as client:
            me = client.call_tool("whoami", {}).structured_content
            assert me is not None and me["user"] == "demo" and "mcp:tools" in me["scopes"]
            assert client.call_tool("increment", {}).content[0].text == "1"
            assert client.call_tool("reset_counter", {}).content[0].text == "reset by demo"
    finally:
        provider.close()
    assert user.pages == ["login", "login"]  # the first sign-in, and the step-up for mcp:admin
    assert "Logged in" in chromium.wait_for("document.body && document.body.innerText", "the callback page")


def test_the_example_client_signs_in_through_the_browser_and_steps_up(oauth_example: str) -> None:
    browser = Path(__file__).resolve().parent / "servers" / "sign_in_browser.py"
    env = {**os.environ, "BROWSER": str(browser), "PYTHONPATH": str(EXAMPLE.parent.parent)}
    done = subprocess.run([sys.executable, str(EXAMPLE.parent / "oauth_client.py"), oauth_example], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["signed in as demo with mcp:tools", "counter: 1", "reset by demo"]
