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

``requestState`` travels through the client, so it is sealed (``RequestStateSecurity``,
``minimcp.server.core.sealing``) and bound to the method, the target, the arguments, the audience
and the principal. Every failure to open it is the one frozen -32602 error; the reason goes to the
server log only. A low-level handler's own state is sealed alike by ``RequestStateBoundary``
(``minimcp.server.core.boundary``).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from minimcp import jsonrpc
from minimcp.jsonrpc import MCPError
from minimcp.server.core.faults import BackendFault
from minimcp.server.core.questions import Gate, Questions
from minimcp.server.core.sealing import InvalidRequestState, RequestStateSecurity
from minimcp.server.core.workers import wall_clock
from minimcp.types import INTERNAL_ERROR, INVALID_PARAMS, InputRequiredResult, dump, parse_input_response
from minimcp.types.methods import METHODS

logger = logging.getLogger("minimcp.server.request_state")

#: Clock skew tolerated on ``iat`` before a state counts as minted in the future.
FUTURE_SKEW = 60.0


class InputRequired(BaseException):
    """A question (or several) with no recorded answer; becomes an ``input_required`` result."""

    def __init__(self, requests: dict[str, dict[str, Any]]) -> None:
        super().__init__(sorted(requests))
        self.requests = requests


def frozen_error() -> MCPError:
    """The single answer to every unusable ``requestState``: it reveals nothing about why."""
    return MCPError(INVALID_PARAMS, "Invalid or expired requestState", {"reason": "invalid_request_state"})


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


#: What a round runs (``run_round``, ``Era.rounds``): the handler, given the question strategy, the
#: client's answers so far (``inputResponses``) and the handler's own ``requestState`` text.
RoundBody = Callable[[Questions, "dict[str, Any] | None", "str | None"], Any]


class AnswerBook(Questions):
    """The answers of one call so far, and the questions this pass could not answer: the question
    strategy of a 2026-07-28 round (``ask``: the recorded answer, or ``InputRequired`` carrying the
    question to the client)."""

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

    def ask(self, key: str, method: str, params: dict[str, Any], gate: Gate) -> dict[str, Any]:
        answer = self.answer(key, method, params)
        if answer is not None:
            return answer
        gate()
        request = {key: {"method": method, "params": params}}
        self.pending.update(request)  # the client gets it with this round's answer
        raise InputRequired(request)

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
    except (InvalidRequestState, BackendFault):  # a shared key ring that failed is no forged state
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
    """Seal the next round's state; a codec failure here is the server's, so -32603, and a shared
    key ring that failed says so (503 with ``Retry-After`` while it is unreachable)."""
    try:
        return security.codec.seal(jsonrpc.encode(payload))
    except BackendFault:
        raise
    except Exception:
        logger.exception("sealing requestState failed")
        raise MCPError(-32603, "Internal error") from None


def run_round(ctx: Any, security: RequestStateSecurity, audience: str | None, run: RoundBody) -> Any:
    """One pass of a 2026-07-28 request's handler (``run``): replaying the answers its retry carries,
    and answering ``input_required`` with the questions it could not answer and the state sealed
    for the next round."""
    params = ctx.params or {}
    responses = params.get("inputResponses")
    binding = Binding(security, ctx, audience)  # works out what it binds only when a state is opened or sealed
    book = open_book(security, binding, params.get("requestState"), responses)
    try:
        result = run(book, responses, book.handler_state)
    except InputRequired:
        result = None
    if book.pending:
        # The result in its wire form, the questions as their askers built them: what a legacy
        # connection sends as requests (``Connection.ask``), not validated into models only to be
        # dumped back.
        return {"resultType": "input_required", "inputRequests": book.pending,
                "requestState": seal(security, book.payload(binding, None))}
    if isinstance(result, InputRequiredResult):
        return _sealed(security, binding, book, result)
    return result


def seal_own_state(ctx: Any, security: RequestStateSecurity, audience: str | None,
                   result: InputRequiredResult) -> InputRequiredResult:
    """A handler's own ``input_required``, answered outside a round: its state sealed as a round's."""
    return _sealed(security, Binding(security, ctx, audience), AnswerBook({}, {}, {}, None), result)


def _sealed(security: RequestStateSecurity, binding: Binding, book: AnswerBook,
            result: InputRequiredResult) -> InputRequiredResult:
    state = seal(security, book.payload(binding, result.request_state))
    return result.model_copy(update={"request_state": state})
