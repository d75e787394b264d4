"""Reading ``WWW-Authenticate`` (RFC 9110 §11.6.1): schemes and their parameters.

A server may send several challenges in one header (``Bearer realm="x", DPoP algs="ES256"``), and
parameter values may be tokens or quoted strings containing commas; splitting on commas or
matching ``name="..."`` anywhere in the text gets both wrong.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_LEXEME = re.compile(r"""\s*(?:(?P<token>[^\s",=]+)|"(?P<quoted>(?:[^"\\]|\\.)*)"|(?P<sep>[=,]))""")


@dataclass
class Challenge:
    """One challenge: the scheme (lower-case) and its parameters (names lower-case)."""

    scheme: str
    params: dict[str, str] = field(default_factory=dict)


def _lexemes(header: str) -> list[tuple[str, str]]:
    found: list[tuple[str, str]] = []
    position = 0
    while position < len(header):
        match = _LEXEME.match(header, position)
        if match is None or match.end() == position:
            position += 1  # a stray character: skip it rather than give up on the whole header
            continue
        position = match.end()
        if match.group("token") is not None:
            found.append(("token", match.group("token")))
        elif match.group("quoted") is not None:
            found.append(("quoted", re.sub(r"\\(.)", r"\1", match.group("quoted"))))
        elif match.group("sep") is not None:
            found.append((match.group("sep"), match.group("sep")))
    return found


def parse_www_authenticate(header: str | None) -> list[Challenge]:
    """Every challenge in a ``WWW-Authenticate`` value, in order; ``[]`` for ``None`` or junk."""
    if not header:
        return []
    items = _lexemes(header)
    challenges: list[Challenge] = []
    index = 0
    while index < len(items):
        kind, text = items[index]
        followed_by_equals = index + 1 < len(items) and items[index + 1][0] == "="
        if kind == "token" and followed_by_equals and challenges:
            value_kind, value = items[index + 2] if index + 2 < len(items) else ("", "")
            if value_kind in ("token", "quoted"):
                challenges[-1].params.setdefault(text.lower(), value)
                index += 3
                continue
            index += 2
            continue
        if kind == "token":
            challenges.append(Challenge(scheme=text.lower()))
        index += 1
    return challenges


def challenge_param(header: str | None, name: str) -> str | None:
    """A parameter from the first Bearer or DPoP challenge that carries it."""
    for challenge in parse_www_authenticate(header):
        if challenge.scheme in ("bearer", "dpop") and name in challenge.params:
            return challenge.params[name]
    return None


__all__ = ["Challenge", "challenge_param", "parse_www_authenticate"]
