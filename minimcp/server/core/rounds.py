"""The 2026-07-28 multi round-trip machinery: ask by raising, answer by replaying.

A 2026-07-28 request cannot push a question to the client. Instead a question with no recorded
answer raises ``InputRequired`` (a ``BaseException``, so ``except Exception`` in user code does not
swallow it); the dispatcher turns it into an ``input_required`` result whose ``requestState``
seals the answers gathered so far. The client retries with ``inputResponses`` and the echoed
state, the handler runs again from the top, and each question already answered returns its
recorded answer at once, so the call gets further each round. No thread waits between rounds;
the server keeps nothing.

An answer is matched to the exact question it answers: the state records a digest of each
question as it was rendered, and a question that renders differently on a later round (a changed
message or schema) fails the call with an error naming its key, since asking it anew would only
repeat the round.

``requestState`` travels through the client, so it is sealed (see ``RequestStateSecurity``) and
bound to the method, the target, the arguments, the audience and the principal. Every failure to
open it is the one frozen -32602 error; the reason goes to the server log only.
"""

from __future__ import annotations

import binascii
import dataclasses
import hashlib
import hmac
import json
import logging
import math
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from pydantic import ValidationError

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError
from minimcp.server.core.workers import Lock, monotonic, wall_clock
from minimcp.types import INTERNAL_ERROR, INVALID_PARAMS, InputRequiredResult, dump, parse_input_response
from minimcp.types.methods import METHODS

if TYPE_CHECKING:
    from minimcp.server.core.ports import Stores

logger = logging.getLogger("minimcp.server.request_state")

#: Clock skew tolerated on ``iat`` before a state counts as minted in the future.
FUTURE_SKEW = 60.0


class InputRequired(BaseException):
    """A question (or several) with no recorded answer; becomes an ``input_required`` result."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(sorted(requests))
        self.requests = requests


class InvalidRequestState(Exception):
    """A ``requestState`` that must be refused; ``reason`` is for the server log only."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def frozen_error() -> MCPError:
    """The single answer to every unusable ``requestState``: it reveals nothing about why."""
    return MCPError(INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"})


# --- sealing ------------------------------------------------------------------------------------
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


# --- the answer book ------------------------------------------------------------------------------
def _canonical_encoder() -> Callable[[Any], str]:
    """The digests' canonical JSON: ``json.dumps(value, sort_keys=True, separators=(",", ":"),
    ensure_ascii=False, default=str)``, the same text (states in flight hold digests of it), with
    its C encoder built once: ``dumps`` builds one per call, which costs as much as encoding a small
    value. The shared one keeps no state between calls, so threads share it: it looks for no
    circular references, as none can occur in what it encodes (parsed JSON, rendered questions),
    and a cycle would still fail, at the recursion limit."""
    plain = json.JSONEncoder(separators=(",", ":"), sort_keys=True, ensure_ascii=False, default=str)
    make = json.encoder.c_make_encoder  # type: ignore[attr-defined]  # the C accelerator, not in typeshed
    if make is None:  # no C accelerator (another interpreter): the plain encoder
        return plain.encode
    encode = make(None, plain.default, json.encoder.encode_basestring, plain.indent, plain.key_separator,
                  plain.item_separator, plain.sort_keys, plain.skipkeys, plain.allow_nan)
    return lambda value: "".join(encode(value, 0))


_canonical = _canonical_encoder()


def digest(value: Any) -> str:
    """SHA-256 over sorted compact JSON: the fingerprint of arguments and of rendered questions."""
    return hashlib.sha256(_canonical(value).encode()).hexdigest()


def validated_answer(method: str, key: str, response: Any) -> dict[str, Any]:
    """A client answer checked against the result type of the question it answers."""
    try:
        return dump(parse_input_response(method, response))
    except (ValidationError, KeyError):
        raise MCPError(INVALID_PARAMS, f"inputResponses['{key}'] is not a valid answer to {method}") from None


#: Per method of the table: the param naming its target, and whether it takes ``arguments`` (a
#: method it does not list: no target, and its arguments count). Read once, not per state.
_SHAPES: dict[str, tuple[str | None, bool]] = {
    name: (row.target, "arguments" in row.params.model_fields) for name, row in METHODS.items()}
_UNLISTED: tuple[str | None, bool] = (None, True)


class Binding:
    """What a state sealed for one request is bound to: its method, its target (the row's ``target``
    field), its arguments (their digest), the audience and the caller (``bind_principal``).

    Worked out the first time a state is sealed or opened (``fields``): most calls do neither.
    """

    def __init__(self, security: RequestStateSecurity, ctx: Any, default_audience: str | None) -> None:
        self._security = security
        self._ctx = ctx
        self._default_audience = default_audience
        self.method: str = ctx.method
        self._fields: tuple[str, str, str, str | None, str | None] | None = None

    def fields(self) -> tuple[str, str, str, str | None, str | None]:
        """``(method, target, argument digest, audience, principal)``. Two threads that ask at once
        both work them out, alike."""
        if self._fields is None:
            params = self._ctx.params or {}
            field, takes = _SHAPES.get(self.method, _UNLISTED)
            target = params.get(field) if field is not None else None
            security = self._security
            self._fields = (self.method, str(target), digest((params.get("arguments") if takes else None) or {}),
                            security.audience if security.audience is not None else self._default_audience,
                            security.bind_principal(self._ctx) if security.bind_principal else None)
        return self._fields


def _changed_question(key: str) -> MCPError:
    return MCPError(
        INTERNAL_ERROR,
        f"The question {key!r} changed between rounds, so its answer no longer fits it: questions must be "
        "built from the arguments and earlier answers (no clock, random or uuid values), so that every "
        "round asks the same ones",
    )


class AnswerBook:
    """The answers of one call so far, and the questions this pass could not answer."""

    def __init__(self, answers: dict[str, dict[str, Any]], asked: dict[str, dict[str, Any]],
                 fresh: dict[str, Any], handler_state: str | None) -> None:
        self._answers = answers  # key -> {"d": question digest, "r": response}
        self._asked = asked  # key -> {"d": digest, "m": method}, the questions of the last round
        self._fresh = fresh  # this round's inputResponses, consumed when their question is asked
        self.handler_state = handler_state
        self.pending: dict[str, dict[str, Any]] = {}
        self._digests: dict[str, str] = {}  # key -> digest of the question asked under it this pass

    def answer(self, key: str, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        """The recorded or fresh answer to this question, ``None`` if it has none yet.

        Raises ``MCPError`` when the question under ``key`` is not the one the client answered:
        asking it again would only repeat the round (a question holding a fresh uuid4, say, would
        loop until the client gives up), so the call fails at once and says why.
        """
        question = self._digests[key] = digest({"method": method, "params": params})
        recorded = self._answers.get(key)
        if recorded is not None:
            if recorded["d"] != question:
                raise _changed_question(key)
            return recorded["r"]
        asked = self._asked.get(key)
        if key in self._fresh and asked is not None:  # an answer counts only to a question asked last round
            if asked["d"] != question:
                raise _changed_question(key)
            response = validated_answer(method, key, self._fresh.pop(key))
            self._answers[key] = {"d": question, "r": response}
            return response
        return None

    def defer(self, requests: dict[str, dict[str, Any]]) -> None:
        """Carry questions ``answer`` found unanswered (so knows the digest of) to the client."""
        self.pending.update(requests)

    def payload(self, binding: Binding, handler_state: str | None) -> dict[str, Any]:
        asked = {key: {"d": self._digests[key], "m": request["method"]} for key, request in self.pending.items()}
        method, target, arguments, audience, principal = binding.fields()
        return {"v": 1, "iat": wall_clock(), "m": method, "t": target, "a": arguments, "aud": audience, "p": principal,
                "answers": self._answers, "asked": asked, "s": handler_state}


def open_book(security: RequestStateSecurity, binding: Binding, request_state: Any,
              input_responses: Any) -> AnswerBook:
    """Verify the incoming state against ``binding`` and gather the answers it and this retry carry."""
    if input_responses is not None and not (
        isinstance(input_responses, dict) and all(isinstance(v, dict) for v in input_responses.values())
    ):
        raise MCPError(INVALID_PARAMS, "inputResponses must be an object mapping each key to a result object")
    fresh = dict(input_responses or {})
    if request_state is None:
        return AnswerBook({}, {}, fresh, None)
    try:
        payload = _unseal(security, binding, request_state)
        if security.spend is not None and not security.spend(hashlib.sha256(request_state.encode()).hexdigest(),
                                                              security.ttl):
            raise InvalidRequestState("already used")
    except InvalidRequestState as refused:
        logger.warning("requestState rejected on %s: %s", binding.method, refused.reason)
        raise frozen_error() from None
    return AnswerBook(payload.get("answers", {}), payload.get("asked", {}), fresh, payload.get("s"))


def _unseal(security: RequestStateSecurity, binding: Binding, token: Any) -> dict[str, Any]:
    if not isinstance(token, str):
        raise InvalidRequestState("non-string requestState")
    try:
        raw = security.codec.unseal(token)
    except InvalidRequestState:
        raise
    except Exception:
        raise InvalidRequestState("codec error") from None
    try:
        # What ``seal`` gave the codec: UTF-8 bytes (decoded here, which ``json.loads`` of bytes would
        # first guess at). A codec handing back text gets it parsed as it is.
        payload = jsonrpc.loads(raw.decode() if isinstance(raw, bytes) else raw)
        iat = float(payload["iat"])
    except (ValueError, KeyError, TypeError):
        raise InvalidRequestState("malformed") from None
    now = wall_clock()
    if iat > now + FUTURE_SKEW:
        raise InvalidRequestState("minted in the future")
    if now > iat + security.ttl:
        raise InvalidRequestState("expired")
    method, target, arguments, audience, principal = binding.fields()
    if (payload.get("m"), payload.get("t"), payload.get("a")) != (method, target, arguments):
        raise InvalidRequestState("request binding")
    if payload.get("aud") != audience:
        raise InvalidRequestState("audience")
    if payload.get("p") != principal:
        raise InvalidRequestState("principal drift" if payload.get("p") is None or principal is None else "principal")
    return payload


def seal(security: RequestStateSecurity, payload: dict[str, Any]) -> str:
    """Seal the next round's state; a codec failure here is the server's, so -32603."""
    try:
        return security.codec.seal(jsonrpc.encode(payload))
    except Exception:
        logger.exception("sealing requestState failed")
        raise MCPError(-32603, "Internal error") from None


class RequestStateBoundary:
    """Low-level server middleware that seals ``requestState`` on the way out and opens it on the way in.

    ``server.middleware.append(RequestStateBoundary(RequestStateSecurity.ephemeral(), default_audience=server.name))``
    lets a low-level handler return ``InputRequiredResult(request_state="plain text")`` and read the
    same plain text back on the next round, while the client only ever holds a sealed token bound to
    the request. ``MCPServer`` needs none: its rounds are sealed the same way already.
    """

    def __init__(self, security: RequestStateSecurity, *, default_audience: str | None) -> None:
        self._security = security
        self._audience = default_audience

    def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        row = METHODS.get(ctx.method)
        if row is None or not row.asks:
            return call_next(ctx)
        binding = Binding(self._security, ctx, self._audience)
        state = (ctx.params or {}).get("requestState")
        if state is not None:
            book = open_book(self._security, binding, state, None)
            ctx = dataclasses.replace(ctx, params={**ctx.params, "requestState": book.handler_state})
        result = call_next(ctx)
        if isinstance(result, InputRequiredResult) and result.request_state is not None:
            payload = AnswerBook({}, {}, {}, None).payload(binding, result.request_state)
            result = result.model_copy(update={"request_state": seal(self._security, payload)})
        elif isinstance(result, dict) and result.get("resultType") == "input_required" \
                and isinstance(result.get("requestState"), str):  # the wire form call_next returns
            payload = AnswerBook({}, {}, {}, None).payload(binding, result["requestState"])
            result = {**result, "requestState": seal(self._security, payload)}
        return result
