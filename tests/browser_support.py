"""Headless Chromium for the sign-in tests, driven over the DevTools protocol on a pipe.

The browser is a real user's: it keeps the site's cookies, follows its redirects, and submits its
forms with their CSRF tokens. ``SiteUser`` is what a person does there (sign in on the login page
when sent to it, then allow or deny on the consent page); it is the ``open_browser`` of
``browser_login``. Installed by ``.ci/install-chromium``.
"""

from __future__ import annotations

import fcntl
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: How long one protocol command or one page may take on a loaded two-core machine.
TIMEOUT = 60.0


class BrowserError(AssertionError):
    pass


class Chromium:
    """One headless Chromium with one tab, its own profile, and the DevTools protocol on fds 3 and 4."""

    def __init__(self, profile: Path) -> None:
        to_browser, self._writer = _high(os.pipe())
        self._reader, from_browser = _high(os.pipe())
        command = [CHROMIUM or "chromium", *CHROMIUM_FLAGS, "--remote-debugging-pipe",
                   f"--user-data-dir={profile}", "about:blank"]
        # The protocol's pipe is fds 3 (commands in) and 4 (answers out) of the browser process.
        self.process = subprocess.Popen(["bash", "-c", f'exec "$@" 3<&{to_browser} 4>&{from_browser}', "bash", *command],
                                        pass_fds=(to_browser, from_browser), stdout=subprocess.DEVNULL,
                                        stderr=subprocess.DEVNULL)
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0
        target = self._call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self._call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]

    def _call(self, method: str, params: dict[str, Any] | None = None, in_page: bool = False) -> dict[str, Any]:
        """Send one command and wait (bounded) for its answer; events in between are not needed."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if in_page:
            message["sessionId"] = self._session
        os.write(self._writer, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + TIMEOUT
        while True:
            while b"\0" not in self._buffer:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or not select.select([self._reader], [], [], remaining)[0]:
                    raise BrowserError(f"Chromium did not answer {method} within {TIMEOUT:g} s")
                chunk = os.read(self._reader, 1 << 16)
                if not chunk:
                    raise BrowserError(f"Chromium exited while answering {method}")
                self._buffer += chunk
            raw, self._buffer = self._buffer.split(b"\0", 1)
            answer = json.loads(raw)
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise BrowserError(f"{method}: {answer['error'].get('message')}")
                return answer["result"]

    def goto(self, url: str) -> None:
        """Start loading ``url`` in the tab, as typing it in the address bar would."""
        self._call("Page.navigate", {"url": url}, in_page=True)

    def evaluate(self, expression: str) -> Any:
        result = self._call("Runtime.evaluate", {"expression": expression, "returnByValue": True}, in_page=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str) -> Any:
        """The first truthy value of ``expression`` in the page, polled until ``TIMEOUT``; a page
        being replaced (navigation) answers nothing meanwhile."""
        deadline = time.monotonic() + TIMEOUT
        while time.monotonic() < deadline:
            try:
                value = self.evaluate(expression)
            except BrowserError:
                value = None
            if value:
                return value
            time.sleep(0.1)
        raise BrowserError(f"waited {TIMEOUT:g} s for {what}; the browser shows {self.location()}:\n{self.text()[:500]}")

    def location(self) -> str:
        return str(self.evaluate("location.href"))

    def text(self) -> str:
        return str(self.evaluate("document.body ? document.body.innerText : ''"))

    def close(self) -> None:
        try:
            self._call("Browser.close")
        except BrowserError:
            self.process.kill()
        self.process.wait(TIMEOUT)
        os.close(self._writer)
        os.close(self._reader)


def _high(pipe: tuple[int, int]) -> tuple[int, int]:
    """The pipe's ends moved to fds of 10 and up, so that putting them at 3 and 4 clobbers neither."""
    moved = tuple(fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10) for fd in pipe)
    for fd in pipe:
        os.close(fd)
    return moved[0], moved[1]


_PAGE = """(() => {
  if (document.readyState !== "complete") return "";
  if (document.querySelector("button[name=decision]")) return "consent";
  if (document.querySelector("input[type=password]")) return "login";
  return "";
})()"""


class SiteUser:
    """A person at ``browser``: the ``open_browser`` of ``browser_login``.

    Sent to an authorization URL, they sign in when the site shows its login page (as
    ``username``/``password``), then press ``decision`` ("allow" or "deny") on the consent page;
    ``decision=None`` is for a site that asks no consent. Each visit is counted in ``visits``.
    """

    def __init__(self, browser: Chromium, username: str, password: str, decision: str | None = "allow") -> None:
        self.browser = browser
        self.username = username
        self.password = password
        self.decision = decision
        self.visits = 0
        self.pages: list[str] = []  # which pages the user saw, in order

    def __call__(self, authorization_url: str) -> bool:
        self.visits += 1
        self.browser.goto(authorization_url)
        page = self.browser.wait_for(_PAGE, "the login or consent page")
        self.pages.append(page)
        if page == "login":
            self.browser.evaluate(
                f"document.querySelector('input[name=username]').value = {json.dumps(self.username)};"
                f"document.querySelector('input[type=password]').value = {json.dumps(self.password)};"
                "document.querySelector('input[type=password]').form.submit()")
            if self.decision is None:
                return True
            self.browser.wait_for(_PAGE.replace('"login"', '""'), "the consent page after signing in")
            self.pages.append("consent")
        self.browser.evaluate(f"document.querySelector('button[value={self.decision}]').click()")
        return True
