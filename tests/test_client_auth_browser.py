"""``browser_login`` with a real browser: headless Chromium against ``examples/oauth_server.py``.

The example runs as its own process. Chromium is the user's browser: it submits the example's
sign-in form (user ``demo``) and follows the authorization server's redirect to the one-shot
loopback server ``browser_login`` listens on. Then the client calls tools, and a tool that needs
more scope sends the user through the browser once more (step-up). Last, ``examples/oauth_client.py``
runs as a user would run it, its ``webbrowser.open`` pointed (``BROWSER=``) at a stand-in browser.
"""

from __future__ import annotations

import html
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from werkzeug.wrappers import Request, Response

from conftest import run_server_process

from minimcp import Client
from minimcp.client.auth import browser_login

EXAMPLE = Path(__file__).resolve().parent.parent / "examples" / "oauth_server.py"
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def example_command(port: int) -> list[str]:
    return [sys.executable, str(EXAMPLE), "--port", str(port), "--host", "127.0.0.1"]


@pytest.fixture
def oauth_example() -> Iterator[str]:
    for base in run_server_process(example_command):
        yield f"{base}/mcp"


class SigningInUser:
    """``open_browser`` for ``browser_login``: Chromium signs in as ``demo`` on the example's page.

    The sign-in page is read for its form (action and hidden request id); Chromium then loads a
    page from a loopback origin that fills and submits that form, and follows the redirects to
    the loopback callback, as a person's browser would after they typed the password.
    """

    def __init__(self, serve_wsgi: Callable[[Any], str], profile: Path) -> None:
        self.forms: list[str] = []
        self.base = serve_wsgi(self._form_page)
        self.profile = profile
        self.browsers: list[subprocess.Popen[str]] = []

    def _form_page(self, environ: dict[str, Any], start_response: Any) -> Any:
        index = int(Request(environ).args["n"])
        return Response(self.forms[index], mimetype="text/html")(environ, start_response)

    def __call__(self, authorization_url: str) -> bool:
        # Read the sign-in page without following a redirect back to the program, which would
        # wait for the program to listen: that part is the browser's.
        answer = requests.get(authorization_url, allow_redirects=False, timeout=30)
        page = answer.headers.get("Location", authorization_url)
        if "/login" in page:
            sign_in = requests.get(requests.compat.urljoin(authorization_url, page), timeout=30)
            request_id = re.search(r'name="request" value="([^"]+)"', sign_in.text)
            action = re.search(r'action="([^"]+)"', sign_in.text)
            assert request_id and action, sign_in.text[:500]
            target = requests.compat.urljoin(sign_in.url, html.unescape(action.group(1)))
            self.forms.append(
                f'<form method="post" action="{html.escape(target)}">'
                f'<input name="request" value="{request_id.group(1)}"><input name="username" value="demo">'
                '<input name="password" value="demo"></form><script>document.forms[0].submit()</script>'
            )
            page = f"{self.base}/?n={len(self.forms) - 1}"
        # A profile of its own per launch: a second Chromium on a profile still in use hands its
        # URL to the first instance, which, dumping its own page, never loads it.
        profile = self.profile / str(len(self.browsers))
        self.browsers.append(subprocess.Popen(
            [CHROMIUM or "chromium", *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "--virtual-time-budget=10000",
             "--dump-dom", page],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True))
        return True

    def pages(self) -> list[str]:
        return [browser.communicate(timeout=120)[0] for browser in self.browsers]


def test_headless_chromium_logs_in_consents_and_steps_up(
    oauth_example: str, serve_wsgi: Callable[[Any], str], tmp_path: Path
) -> None:
    if CHROMIUM is None:
        pytest.skip("chromium is not installed (run .ci/install-chromium)")
    user = SigningInUser(serve_wsgi, tmp_path / "chromium-profile")
    provider = browser_login(oauth_example, open_browser=user, timeout=120)
    try:
        with Client(oauth_example, auth=provider) as client:
            me = client.call_tool("whoami", {}).structured_content
            assert me is not None and me["user"] == "demo" and "mcp:tools" in me["scopes"]
            assert client.call_tool("increment", {}).content[0].text == "1"
            assert client.call_tool("reset_counter", {}).content[0].text == "reset by demo"
    finally:
        provider.close()
        pages = user.pages()
    assert len(pages) == 2  # the first sign-in, and the step-up for mcp:admin
    assert all("Logged in" in page for page in pages)


def test_the_example_client_signs_in_through_the_browser_and_steps_up(oauth_example: str) -> None:
    browser = Path(__file__).resolve().parent / "servers" / "sign_in_browser.py"
    env = {**os.environ, "BROWSER": str(browser), "PYTHONPATH": str(EXAMPLE.parent.parent)}
    done = subprocess.run([sys.executable, str(EXAMPLE.parent / "oauth_client.py"), oauth_example], env=env,
                          capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["signed in as demo with mcp:tools", "counter: 1", "reset by demo"]
