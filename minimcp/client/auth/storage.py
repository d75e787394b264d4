"""Where a provider keeps its tokens and its client registration between runs."""

from __future__ import annotations

import threading
from typing import Protocol

from minimcp.shared.auth import OAuthClientInformationFull, OAuthToken


class TokenStorage(Protocol):
    """Persist tokens and client information; a provider calls these with its own lock held."""

    def get_tokens(self) -> OAuthToken | None: ...

    def set_tokens(self, tokens: OAuthToken) -> None: ...

    def get_client_info(self) -> OAuthClientInformationFull | None: ...

    def set_client_info(self, client_info: OAuthClientInformationFull) -> None: ...


class InMemoryTokenStorage:
    """A :class:`TokenStorage` for one process: tokens live until the program exits."""

    def __init__(self) -> None:
        # Guards both fields, so one provider's writes are seen whole by another thread's reads.
        self._lock = threading.Lock()
        self._tokens: OAuthToken | None = None
        self._client_info: OAuthClientInformationFull | None = None

    def get_tokens(self) -> OAuthToken | None:
        with self._lock:
            return self._tokens

    def set_tokens(self, tokens: OAuthToken) -> None:
        with self._lock:
            self._tokens = tokens

    def get_client_info(self) -> OAuthClientInformationFull | None:
        with self._lock:
            return self._client_info

    def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        with self._lock:
            self._client_info = client_info


__all__ = ["InMemoryTokenStorage", "TokenStorage"]
