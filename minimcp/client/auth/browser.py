"""OAuth for a script on a desktop: open the system browser, catch the redirect on a loopback port.

    from minimcp import Client
    from minimcp.client import terminal_elicitation
    from minimcp.client.auth import browser_login

    with Client(url, auth=browser_login(url), elicitation_callback=terminal_elicitation) as client:
        ...

The redirect URI is ``http://127.0.0.1:<random port>/callback`` (RFC 8252 §7.3: a native app's
loopback redirect, any port). The port is bound when the provider is made, since registration
records the URI, and kept until :meth:`close`; the server behind it answers only while a login
is waiting for its redirect, one request at a time, and gives up after ``timeout`` seconds.
When no browser can be opened the URL is printed for the user to open by hand.
"""

from __future__ import annotations

import html
import sys
import time
import webbrowser
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, TextIO
from urllib.parse import parse_qs, urlsplit

from pydantic import AnyUrl

from minimcp.client.auth.exceptions import OAuthFlowError
from minimcp.client.auth.oauth2 import OAuthClientProvider
from minimcp.client.auth.storage import InMemoryTokenStorage, TokenStorage
from minimcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata

CALLBACK_PATH = "/callback"
_DONE_PAGE = "<!doctype html><title>{title}</title><h1>{title}</h1><p>{text}</p>"


class _CallbackHandler(BaseHTTPRequestHandler):
    """Answers the browser's one redirect; anything else (a favicon) gets a 404."""

    server: _LoopbackServer
    #: A connection that sends nothing (a browser's speculative preconnect) is dropped after this.
    timeout = 10

    def do_GET(self) -> None:  # noqa: N802 (the http.server naming)
        parts = urlsplit(self.path)
        if parts.path != CALLBACK_PATH:
            self.send_error(404)
            return
        query = {name: values[0] for name, values in parse_qs(parts.query).items()}
        self.server.query = query
        if "error" in query:
            title, text = "Login failed", f"The authorization server said: {query['error']}. You can close this window."
        else:
            title, text = "Logged in", "You can close this window and go back to the program."
        body = _DONE_PAGE.format(title=html.escape(title), text=html.escape(text)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Silent: the request line carries the authorization code."""


class _LoopbackServer(HTTPServer):
    query: dict[str, str] | None = None


class LoopbackRedirect:
    """The redirect and callback handlers of a browser login, on a loopback port."""

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        timeout: float = 300.0,
        open_browser: Callable[[str], bool] = webbrowser.open,
        output: TextIO | None = None,
    ) -> None:
        self.timeout = timeout
        self.open_browser = open_browser
        self.output = output
        self._server = _LoopbackServer((host, port), _CallbackHandler)
        self.redirect_uri = f"http://{host}:{self._server.server_port}{CALLBACK_PATH}"

    def redirect(self, authorization_url: str) -> None:
        """Send the user to the authorization page, or show its address when no browser opens."""
        self._server.query = None
        if not self.open_browser(authorization_url):
            out = self.output or sys.stderr
            out.write(f"Open this address in a browser to log in:\n{authorization_url}\n")
            out.flush()

    def callback(self) -> AuthorizationCodeResult:
        """Wait (at most ``timeout`` seconds) for the browser to come back with the code."""
        deadline = time.monotonic() + self.timeout
        while self._server.query is None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise OAuthFlowError(f"No login came back to {self.redirect_uri} within {self.timeout:g} s")
            self._server.timeout = remaining
            self._server.handle_request()
        query = self._server.query
        if "error" in query:
            description = query.get("error_description", "")
            raise OAuthFlowError(
                f"The authorization server refused the login: {query['error'][:100]}"
                + (f" ({description[:300]})" if description else "")
            )
        return AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"), iss=query.get("iss"))

    def close(self) -> None:
        self._server.server_close()


class _BrowserLoginProvider(OAuthClientProvider):
    def __init__(self, loopback: LoopbackRedirect, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._loopback = loopback

    def close(self) -> None:
        super().close()
        self._loopback.close()


def browser_login(
    server_url: str,
    *,
    storage: TokenStorage | None = None,
    client_name: str = "minimcp",
    client_metadata_url: str | None = None,
    timeout: float = 300.0,
    open_browser: Callable[[str], bool] = webbrowser.open,
    port: int = 0,
    **provider_options: Any,
) -> OAuthClientProvider:
    """An :class:`OAuthClientProvider` that logs in through the system browser.

    ``storage`` defaults to memory (a login per run); pass your own :class:`TokenStorage` to keep
    tokens between runs. ``open_browser(url) -> bool`` replaces :func:`webbrowser.open` (a test
    drives a headless browser with it). Other keywords go to :class:`OAuthClientProvider`.
    """
    loopback = LoopbackRedirect(port=port, timeout=timeout, open_browser=open_browser)
    metadata = OAuthClientMetadata(client_name=client_name, redirect_uris=[AnyUrl(loopback.redirect_uri)])
    return _BrowserLoginProvider(
        loopback,
        server_url,
        metadata,
        storage if storage is not None else InMemoryTokenStorage(),
        redirect_handler=loopback.redirect,
        callback_handler=loopback.callback,
        client_metadata_url=client_metadata_url,
        **provider_options,
    )


__all__ = ["LoopbackRedirect", "browser_login"]
