"""Sealing ``requestState``: the cipher, its keys, and the policy of what a state is bound to.

A ``requestState`` travels through the client, so it is sealed (encrypted and authenticated) with
keys the client never sees: ``HMACRequestStateCodec`` over a key ring given as it is, or
``BackendKeyCodec`` over the ring a shared ``KeyRing`` (``minimcp.server.core.ports``) keeps for
every process. ``RequestStateSecurity`` is the policy: which codec, how long a state lives, which
audience and principal it is bound to, and whether a state is single-use. What a state holds, and
how a round opens and seals one, is ``minimcp.server.core.rounds``.
"""

from __future__ import annotations

import binascii
import hashlib
import hmac
import math
import os
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol

from minimcp.server.core.ports import Stores
from minimcp.server.core.workers import Lock, monotonic

__all__ = ["BackendKeyCodec", "HMACRequestStateCodec", "InvalidRequestState", "RequestStateCodec",
           "RequestStateSecurity"]


class InvalidRequestState(Exception):
    """A ``requestState`` that must be refused; ``reason`` is for the server log only."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RequestStateCodec(Protocol):
    def seal(self, payload: bytes) -> str: ...

    def unseal(self, token: str) -> bytes:
        """The payload ``seal`` produced; raises ``InvalidRequestState`` for anything else."""


_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


def _b64(data: bytes) -> str:
    """Unpadded base64url: ``base64.urlsafe_b64encode`` without its padding, in binascii's steps
    called directly (the module's wrappers cost as much as the encoding of a state)."""
    return binascii.b2a_base64(data, newline=False).translate(_TO_URLSAFE).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    """``base64.urlsafe_b64decode`` of unpadded text, in binascii's steps called directly; as it,
    lenient (``unseal`` accepts one spelling only) and a ``ValueError`` for non-ASCII text."""
    return binascii.a2b_base64((text + "=" * (-len(text) % 4)).encode("ascii").translate(_FROM_URLSAFE))


def _hkdf(key: bytes, info: bytes) -> bytes:
    prk = hmac.new(b"minimcp request state", key, hashlib.sha256).digest()
    return hmac.new(prk, info + b"\x01", hashlib.sha256).digest()


class HMACRequestStateCodec:
    """Standard-library sealing, encrypt-then-MAC: a SHAKE-256 keystream, then an HMAC-SHA256 tag.

    Token: ``"m2." + base64url(key id(4) || nonce(16) || ciphertext || tag(32))``. The keystream is
    SHAKE-256 over (stream key || nonce), the prefix-keyed XOF that FIPS 203 uses as its PRF: one
    hash call whatever the payload's length. The tag is HMAC-SHA256 over the body. ``keys[0]``
    seals; every key unseals, which is what makes rotation possible.

    ``"m1."`` tokens, which earlier versions minted (an HMAC-SHA256 counter-mode keystream, one HMAC
    per 32 bytes), still open until they expire. Each version derives its own keys from a ring key,
    so a body relabelled as the other version fails its tag.
    """

    _PREFIX = "m2."
    _LEGACY = "m1."

    def __init__(self, keys: Sequence[bytes]) -> None:
        # Keyed HMACs, copied for each use: keying one costs more than hashing a block. Copying a
        # shared HMAC is thread-safe (it only reads it, under the object's own lock).
        self._ring: dict[bytes, _Keys] = {}
        self._minting = b""
        for key in keys:
            kid = hashlib.sha256(b"minimcp key id" + key).digest()[:4]
            self._ring[kid] = _Keys(_hkdf(key, b"xof"), _keyed(_hkdf(key, b"tag")),
                                    _keyed(_hkdf(key, b"enc")), _keyed(_hkdf(key, b"mac")))
            self._minting = self._minting or kid

    @staticmethod
    def _mac(keyed: hmac.HMAC, data: bytes) -> bytes:
        h = keyed.copy()
        h.update(data)
        return h.digest()

    @classmethod
    def _counter_stream(cls, keyed: hmac.HMAC, nonce: bytes, size: int) -> bytes:
        """The ``m1.`` keystream: HMAC-SHA256 of ``nonce`` and a block counter, 32 bytes per block."""
        return b"".join(cls._mac(keyed, nonce + i.to_bytes(4, "big")) for i in range(math.ceil(size / 32)))[:size]

    def seal(self, payload: bytes) -> str:
        keys = self._ring[self._minting]
        nonce = os.urandom(16)
        body = self._minting + nonce + _xor(payload, hashlib.shake_256(keys.stream + nonce).digest(len(payload)))
        return self._PREFIX + _b64(body + self._mac(keys.tag, body))

    def unseal(self, token: str) -> bytes:
        legacy = token.startswith(self._LEGACY)
        if not (legacy or token.startswith(self._PREFIX)):
            raise InvalidRequestState("malformed")
        text = token[len(self._PREFIX):]
        try:
            raw = _unb64(text)
        except ValueError:
            raise InvalidRequestState("malformed") from None
        if _b64(raw) != text:  # the decoder skips stray characters and padding bits: accept one spelling only
            raise InvalidRequestState("malformed")
        if len(raw) < 4 + 16 + 32:
            raise InvalidRequestState("malformed")
        body, tag = raw[:-32], raw[-32:]
        keys = self._ring.get(body[:4])
        if keys is None:
            raise InvalidRequestState("unknown key")
        if not hmac.compare_digest(tag, self._mac(keys.legacy_mac if legacy else keys.tag, body)):
            raise InvalidRequestState("seal")
        nonce, sealed = body[4:20], body[20:]
        if legacy:
            return _xor(sealed, self._counter_stream(keys.legacy_stream, nonce, len(sealed)))
        return _xor(sealed, hashlib.shake_256(keys.stream + nonce).digest(len(sealed)))


def _keyed(key: bytes) -> hmac.HMAC:
    return hmac.new(key, digestmod=hashlib.sha256)


class _Keys(NamedTuple):
    """One ring key's derived keys: ``m2.``'s stream key and tag HMAC, and ``m1.``'s keystream
    and tag HMACs, kept to open the tokens earlier versions minted."""

    stream: bytes
    tag: hmac.HMAC
    legacy_stream: hmac.HMAC
    legacy_mac: hmac.HMAC


def _xor(data: bytes, stream: bytes) -> bytes:
    """``data`` XOR an equally long ``stream`` (its own inverse)."""
    return (int.from_bytes(data, "big") ^ int.from_bytes(stream, "big")).to_bytes(len(data), "big")


class BackendKeyCodec:
    """The HMAC codec over a shared backend's key ring: every process seals and opens alike.

    Sealing reads the ring (one round trip, already paid by a round that asks): a rotation takes
    effect at once, and a store restarted empty gets the ring back from the first process that
    seals. Opening uses the ring last read, read again when a state names a key this process does
    not hold (at most once per ``RETRY`` seconds, so made-up key ids cost no round trip each).
    """

    RETRY = 1.0

    def __init__(self, backend: Stores) -> None:
        self._backend = backend
        # _lock guards _keys, _codec and _retried_at.
        self._lock = Lock()
        self._keys: list[bytes] = []  # read on first use: the store may start after this process
        self._codec: HMACRequestStateCodec | None = None
        self._retried_at = 0.0

    def _read(self) -> HMACRequestStateCodec:
        with self._lock:
            held = list(self._keys)
        keys = self._backend.request_state_keys(seed=held)
        with self._lock:
            if keys != self._keys or self._codec is None:
                self._keys, self._codec = keys, HMACRequestStateCodec(keys)
            return self._codec

    def seal(self, payload: bytes) -> str:
        return self._read().seal(payload)

    def unseal(self, token: str) -> bytes:
        with self._lock:
            codec = self._codec
        if codec is None:
            codec = self._read()
        try:
            return codec.unseal(token)
        except InvalidRequestState as refused:
            now = monotonic()
            with self._lock:
                retry = refused.reason == "unknown key" and now - self._retried_at > self.RETRY
                if retry:
                    self._retried_at = now
            if not retry:
                raise
            return self._read().unseal(token)


def _default_principal(request_context: Any) -> str | None:
    """The caller the transport's principal hook found (``MCPWSGIApp(principal=...)``)."""
    return request_context.transport.principal


class RequestStateSecurity:
    """How ``requestState`` is sealed and what it is bound to; share ``keys`` across processes."""

    def __init__(
        self,
        *,
        keys: Sequence[bytes | bytearray | str] | None = None,
        codec: RequestStateCodec | None = None,
        ttl: float = 600.0,
        bind_principal: Callable[[Any], str | None] | None = _default_principal,
        audience: str | None = None,
    ) -> None:
        if (keys is None) == (codec is None):
            raise ValueError("RequestStateSecurity takes exactly one of keys= or codec=")
        if isinstance(ttl, bool) or not isinstance(ttl, (int, float)) or not math.isfinite(ttl) or ttl <= 0:
            raise ValueError(f"request-state ttl must be a positive finite number, got {ttl}")
        if keys is not None:
            codec = HMACRequestStateCodec(_check_keys(keys))
        self.codec: RequestStateCodec = codec  # type: ignore[assignment]
        self.ttl = float(ttl)
        self.bind_principal = bind_principal
        self.audience = audience
        self.explicit = True
        #: ``spend(digest, ttl) -> bool``: record a state's use, ``False`` when it was used already
        #: (a shared backend's single-use rule); ``None`` lets a state be used again within its ttl.
        self.spend: Callable[[str, float], bool] | None = None

    @classmethod
    def ephemeral(cls, *, ttl: float = 600.0, audience: str | None = None) -> RequestStateSecurity:
        """One random key for this process: right for stdio and a single HTTP process."""
        security = cls(keys=[os.urandom(32)], ttl=ttl, audience=audience)
        security.explicit = False
        return security

    @classmethod
    def from_backend(cls, backend: Stores, *, ttl: float = 600.0, audience: str | None = None) -> RequestStateSecurity:
        """The keys of ``backend``: per process for a memory one (``ephemeral``); for a shared one,
        made once and read by every process, and each state single-use (a second use is refused
        with the same -32602 as any other unusable state)."""
        if not backend.shared:
            security = cls(keys=backend.request_state_keys(), ttl=ttl, audience=audience)
            security.explicit = False
            return security
        security = cls(codec=BackendKeyCodec(backend), ttl=ttl, audience=audience)
        security.spend = backend.spend_request_state
        return security


def _check_keys(keys: Sequence[bytes | bytearray | str]) -> list[bytes]:
    ring: list[bytes] = []
    for index, key in enumerate(keys):
        if isinstance(key, str):
            key = key.encode()
        elif isinstance(key, (bytes, bytearray)):
            key = bytes(key)
        else:
            raise TypeError(f"request-state keys must be bytes, bytearray, or str; keys[{index}] is {type(key).__name__}")
        if len(key) < 32:
            raise ValueError(
                f"request-state keys must be at least 32 bytes of secret randomness; keys[{index}] is {len(key)} "
                'bytes. Generate one with: python -c "import secrets; print(secrets.token_hex(32))"'
            )
        if key in ring:
            raise ValueError(f"keys[{index}] duplicates an earlier ring key")
        ring.append(key)
    if not ring:
        raise ValueError("RequestStateSecurity needs at least one key")
    return ring
