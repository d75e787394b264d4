"""One request to an API an OpenAPI document describes, and its answer, within fixed bounds.

The operator's credentials (the session's headers, an API key in its query parameters, its
cookies, an ``auth=`` object) go with every request, so where a request may go is decided here and
nowhere else: to the base URL's origin (scheme, host and port), under its path, with no dot
segment, checked on the URL exactly as ``requests`` will send it. A redirect is followed only when
its target passes the same check; ``requests``' own redirect handling is not used, since across
hosts it strips only ``Authorization`` and would hand the rest to whoever the answer points at.

The whole exchange, redirects included, has one deadline (``timeout``), and the body is read to at
most ``limit`` bytes (after decompression), then the exchange is abandoned
(``minimcp.shared.bounded_http``, which says how).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, unquote, urljoin, urlsplit, urlunsplit

import requests

from minimcp.shared.bounded_http import Late, ReadFailed, TooLarge, open_response, read_body

#: Redirects followed within one exchange.
MAX_REDIRECTS = 5

_REDIRECTS = (301, 302, 303, 307, 308)
_DEFAULT_PORTS = {"http": 80, "https": 443}


class ExchangeError(Exception):
    """No answer came: the message names the request, says why, and what setting to change."""


@dataclass(frozen=True)
class Base:
    """Where requests may go: ``origin`` (scheme, host, port), under ``path`` (no trailing ``/``);
    ``url`` is both, as ``requests`` sends it."""

    url: str
    origin: tuple[str, str, int]
    path: str

    @classmethod
    def parse(cls, url: str, *, whole_origin: bool = False) -> Base:
        """The base ``url`` names; with ``whole_origin``, anywhere on its origin (a spec's own URL,
        which may carry a query and redirect to another path)."""
        try:
            sent = str(requests.Request("GET", url).prepare().url)
        except (requests.RequestException, ValueError) as failed:
            raise ValueError(f"{url!r} is not a URL requests can send to: {failed}") from None
        parts = urlsplit(sent)
        origin = _origin(parts)
        if origin is None:
            raise ValueError(f"{url!r} is not an http or https URL with a host")
        if whole_origin:
            return cls(urlunsplit((parts.scheme, parts.netloc, "", "", "")), origin, "")
        if parts.query or parts.fragment:
            raise ValueError(f"{url!r} has a query or a fragment; a base URL is a scheme, a host and a path "
                             "(an API key in the query goes in session.params)")
        path = parts.path.rstrip("/")
        return cls(urlunsplit((parts.scheme, parts.netloc, path, "", "")), origin, path)

    def admits(self, url: str) -> bool:
        parts = urlsplit(url)
        path = parts.path
        return (_origin(parts) == self.origin and (path == self.path or path.startswith(self.path + "/"))
                and not has_dot_segment(path))


def has_dot_segment(path: str) -> bool:
    """Whether a ``.`` or ``..`` segment (or its percent-encoded spelling, which servers decode)
    is in ``path``: one would move the request elsewhere on the server."""
    return any(unquote(segment) in (".", "..") for segment in path.split("/"))


def _origin(parts: SplitResult) -> tuple[str, str, int] | None:
    scheme = parts.scheme.lower()
    try:
        port = parts.port or _DEFAULT_PORTS.get(scheme)
    except ValueError:
        return None
    if scheme not in _DEFAULT_PORTS or not parts.hostname or port is None:
        return None
    return scheme, parts.hostname.lower(), port


@dataclass(frozen=True)
class Answer:
    """The last response of an exchange: ``request`` names it (method and ``public_url``), ``text``
    is its body."""

    request: str
    status: int
    reason: str
    text: str


class Exchange:
    """Requests to one API through ``session`` (its headers, cookies, adapters and environment),
    each within ``base``, ``timeout`` seconds and ``limit`` bytes of answer; ``limit_setting`` is
    the keyword that raises the limit, for the refusal to name."""

    def __init__(self, base: Base, session: requests.Session, auth: Any, timeout: float, limit: int,
                 limit_setting: str | None = None) -> None:
        self.base, self.session, self.auth = base, session, auth
        self.timeout, self.limit, self.limit_setting = timeout, limit, limit_setting

    def send(self, method: str, url: str, *, params: dict[str, Any] | None = None,
             headers: dict[str, str] | None = None, cookies: dict[str, str] | None = None,
             payload: Any = None) -> Answer:
        deadline = time.monotonic() + self.timeout
        request = requests.Request(method.upper(), url, params=params or {}, headers=headers, cookies=cookies,
                                   json=payload, auth=self.auth)
        for _ in range(MAX_REDIRECTS + 1):
            shown = f"{request.method} {public_url(str(request.url))}"
            try:
                prepared = self.session.prepare_request(request)
            except (requests.RequestException, ValueError) as failed:
                raise _failure(shown, failed, str(request.url)) from None
            sent = str(prepared.url)
            if not self.base.admits(sent):
                raise ExchangeError(f"{shown} is refused: it is not under {public_url(self.base.url)}, "
                                    "where the API is")
            with self._open(prepared, sent, deadline, shown) as answer:
                location = answer.headers.get("Location") if answer.status_code in _REDIRECTS else None
                if location is None:
                    return Answer(shown, answer.status_code, answer.reason, self._read(answer, deadline, shown))
            target = urljoin(sent, location)
            if not self.base.admits(target):
                raise ExchangeError(f"{shown} answered {answer.status_code} {answer.reason}, a redirect to "
                                    f"{public_url(target)}, which is not followed: it leaves "
                                    f"{public_url(self.base.url)}, where the API is")
            request = _redirected(request, answer.status_code, target)
        raise ExchangeError(f"{shown} redirected again: more than {MAX_REDIRECTS} redirects are not followed")

    def _open(self, prepared: requests.PreparedRequest, sent: str, deadline: float, shown: str) -> requests.Response:
        try:
            return open_response(self.session, prepared, deadline)
        except Late:
            raise self._late(shown) from None
        except requests.RequestException as failed:
            raise _failure(shown, failed, sent) from None

    def _read(self, answer: requests.Response, deadline: float, shown: str) -> str:
        try:
            body = read_body(answer, deadline, self.limit)
        except Late:
            raise self._late(shown) from None
        except ReadFailed as failed:
            raise ExchangeError(f"{shown} failed while reading the answer: {failed}") from None
        except TooLarge:
            setting = f"; from_openapi(..., {self.limit_setting}=...) raises it" if self.limit_setting else ""
            raise ExchangeError(f"{shown} answered more than {self.limit:,} bytes, the most read{setting}") from None
        return body.decode(answer.encoding or "utf-8", errors="replace")

    def _late(self, shown: str) -> ExchangeError:
        return ExchangeError(f"{shown} did not finish within {self.timeout:g} s, the timeout for the whole "
                             "exchange (from_openapi(..., timeout=...))")


def _redirected(request: requests.Request, status: int, target: str) -> requests.Request:
    """The request a redirect asks for: a GET without body after a 303 (or a 301/302 to a POST, as
    browsers do), else the same method and body; its query is the target's."""
    to_get = (status == 303 and request.method != "HEAD") or (status in (301, 302) and request.method == "POST")
    return requests.Request("GET" if to_get else request.method, target, headers=request.headers,
                            cookies=request.cookies, json=None if to_get else request.json, auth=request.auth)


def _failure(shown: str, failed: Exception, url: str) -> ExchangeError:
    """A failed request, said without the query of its ``url`` (urllib3 names the URL it gave up on,
    and the query may hold the operator's API key)."""
    query = urlsplit(url).query
    said = str(failed).replace(f"?{query}", "") if query else str(failed)
    return ExchangeError(f"{shown} failed: {said}")


def public_url(url: str) -> str:
    """``url`` as a message may show it: without a password or an API key (its userinfo, its query)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc.rpartition("@")[2], parts.path, "", ""))
