"""Tool and prompt arguments from the command line: ``key=value`` words typed by the tool's schema.

A shell has only strings, and a tool that takes ``party_size: int`` refuses ``"2"``; so each value is
converted by the type its property declares in the tool's input schema (integers, numbers, booleans,
JSON for objects and arrays; for a union, the first type the text fits). A property the schema does
not describe stays a string. ``--json '{...}'`` and ``-`` (a JSON object on stdin) give arguments
whole, and ``key=value`` words override their keys.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import IO, Any

from minimcp.cli.errors import CLIError, json_object

_TRUE = frozenset({"true", "yes", "y", "1", "on"})
_FALSE = frozenset({"false", "no", "n", "0", "off"})
#: The JSON Schema types a value is tried as when a property allows several, in this order.
_ORDER = ("null", "boolean", "integer", "number", "object", "array", "string")


def split_pairs(words: Sequence[str]) -> list[tuple[str, str]]:
    """``["date=2025-12-25", ...]`` into pairs; a word without ``=`` is a mistake worth naming."""
    pairs = []
    for word in words:
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise CLIError(f"{word!r} is not key=value: write each argument as NAME=VALUE (e.g. party_size=2), "
                           "or give them all as --json '{...}'")
        pairs.append((key, value))
    return pairs


def read_json_object(text: str, stdin: IO[str], where: str) -> dict[str, Any]:
    """A JSON object of arguments, from ``text`` or from stdin when ``text`` is ``-``."""
    if text == "-":
        text, where = stdin.read(), "stdin"
    return json_object(text, f"the arguments on {where}", 'give an object such as \'{"party_size": 2}\'')


def typed_arguments(pairs: Sequence[tuple[str, str]], schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Each pair's value converted by its property in ``schema`` (a JSON Schema object)."""
    properties = (schema or {}).get("properties") or {}
    return {key: convert(key, value, properties.get(key) or {}) for key, value in pairs}


def convert(key: str, text: str, prop: Mapping[str, Any]) -> Any:
    types = _types_of(prop)
    if not types or "string" in types and len(types) == 1:
        return text
    for kind in sorted(types, key=_ORDER.index):
        try:
            return _as(kind, text)
        except ValueError:
            continue
    raise CLIError(f"{key}={text!r}: the tool expects {' or '.join(sorted(types, key=_ORDER.index))}"
                   + (" (write JSON for an object or array)" if {"object", "array"} & types else ""))


def _types_of(prop: Mapping[str, Any]) -> set[str]:
    """The types a property allows: ``type`` (one or a list), or those of its ``anyOf``/``oneOf``."""
    declared = prop.get("type")
    if isinstance(declared, str):
        return {declared} & set(_ORDER)
    if isinstance(declared, list):
        return {t for t in declared if t in _ORDER}
    kinds: set[str] = set()
    for option in (prop.get("anyOf") or prop.get("oneOf") or []):
        if isinstance(option, Mapping):
            kinds |= _types_of(option)
    if "enum" in prop and not kinds:
        kinds = {_json_type(v) for v in prop["enum"]}
    return kinds


def _json_type(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    return "null" if value is None else "string"


def _as(kind: str, text: str) -> Any:
    if kind == "string":
        return text
    if kind == "boolean":
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise ValueError(text)
    if kind == "integer":
        return int(text)
    if kind == "number":
        number = float(text)
        return int(number) if number.is_integer() and "." not in text and "e" not in text.lower() else number
    if kind == "null":
        if text in ("null", "none", ""):
            return None
        raise ValueError(text)
    value = json.loads(text)
    if not isinstance(value, dict if kind == "object" else list):
        raise ValueError(text)
    return value
