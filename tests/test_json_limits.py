"""The JSON limits every received message passes (``minimcp.jsonrpc.decode``): nesting depth and
the number of arrays and objects, checked on the bytes before parsing.

Hypothesis draws JSON texts whose strings are full of brackets, quotes and backslashes (what the
check must not mistake for structure) and compares the verdict with a walk of the parsed value;
hostile 4 MB bodies are refused, and a body within the limits parses. How fast the check is, is
measured by ``benchmarks/json_limits.py``, not here.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from minimcp import jsonrpc
from minimcp.jsonrpc import MAX_JSON_CONTAINERS, MAX_JSON_DEPTH, MCPError, decode

FOUR_MB = 4 * 1024 * 1024
TOO_DEEP = f"Parse error: JSON nested deeper than {MAX_JSON_DEPTH} levels"
TOO_MANY = f"Parse error: JSON with more than {MAX_JSON_CONTAINERS} arrays and objects"


def walk(value: Any, depth: int = 1) -> tuple[int, int]:
    """(depth, containers) of a parsed value, the slow and obvious way."""
    if isinstance(value, dict):
        children = list(value.values())
    elif isinstance(value, list):
        children = value
    else:
        return 0, 0
    deepest, count = depth, 1
    for child in children:
        d, c = walk(child, depth + 1)
        deepest, count = max(deepest, d), count + c
    return deepest, count


def refusal(data: bytes | str) -> str:
    with pytest.raises(MCPError) as refused:
        decode(data)
    assert refused.value.code == -32700
    return str(refused.value)


# --- hostile bodies --------------------------------------------------------------------------------------
def test_four_megabytes_nested_are_refused_as_too_deep():
    assert refusal(b"[" * (FOUR_MB // 2) + b"]" * (FOUR_MB // 2)) == TOO_DEEP
    assert refusal(b'{"a":' * (FOUR_MB // 6) + b"1" + b"}" * (FOUR_MB // 6)) == TOO_DEEP


@pytest.mark.parametrize("item", [b"[]", b"{}", b'{"":[]}', b'["["]'])
def test_four_megabytes_wide_are_refused_as_too_many(item: bytes):
    body = b"[" + b",".join([item] * (FOUR_MB // (len(item) + 1))) + b"]"
    assert refusal(body) == TOO_MANY


def test_a_deep_body_hidden_behind_brackets_in_strings_is_still_refused():
    """Closing brackets inside a string do not close anything."""
    inner = MAX_JSON_DEPTH  # one more level with the object around it
    body = b'{"s":"' + b"]" * 1000 + b'","x":' + b"[" * inner + b"]" * inner + b"}"
    assert refusal(body) == TOO_DEEP


# --- what passes ------------------------------------------------------------------------------------------
def test_brackets_inside_strings_are_not_structure():
    text = "[{" * 500_000 + '\\"' + "]}" * 10
    assert decode(json.dumps({"code": text, "more": ["[" * 100] * 1000})) == {"code": text, "more": ["[" * 100] * 1000}


def test_the_limits_themselves_are_allowed():
    at_depth = b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH
    assert walk(decode(at_depth)) == (MAX_JSON_DEPTH, MAX_JSON_DEPTH)
    assert refusal(b"[" + at_depth + b"]") == TOO_DEEP
    at_count = b"[" + b",".join([b"{}"] * (MAX_JSON_CONTAINERS - 1)) + b"]"
    assert walk(decode(at_count)) == (2, MAX_JSON_CONTAINERS)
    assert refusal(b"[" + b",".join([b"{}"] * MAX_JSON_CONTAINERS) + b"]") == TOO_MANY


def test_unbalanced_brackets_are_invalid_json_not_deep():
    assert refusal(b"[" + b"[]," * 100 + b"[]]]") == "Parse error: the body is not valid JSON"
    assert refusal("]" * 100) == "Parse error: the body is not valid JSON"


# --- the check agrees with a walk of the parsed value ------------------------------------------------------
TRICKY = st.text(alphabet='[]{}"\\/u0a \u00e9\U0001f600', max_size=12)
VALUES = st.recursive(st.none() | st.booleans() | st.integers() | TRICKY,
                      lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TRICKY, inner, max_size=4),
                      max_leaves=60)


@settings(max_examples=400, deadline=None)
@given(VALUES, st.booleans())
def test_the_verdict_matches_a_walk_of_the_value(value: Any, as_text: bool):
    depth_limit, count_limit = 5, 20  # small, so that drawn values cross them
    data: bytes | str = json.dumps(value, ensure_ascii=False)
    if not as_text:
        data = data.encode()
    depth, count = walk(value)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsonrpc, "MAX_JSON_DEPTH", depth_limit)
        patch.setattr(jsonrpc, "MAX_JSON_CONTAINERS", count_limit)
        try:
            decoded = decode(data)
        except MCPError as refused:
            reasons = {str(refused)}
        else:
            assert decoded == value
            reasons = set()
    expected = set()
    if depth > depth_limit:
        expected.add(f"Parse error: JSON nested deeper than {depth_limit} levels")
    if count > count_limit:
        expected.add(f"Parse error: JSON with more than {count_limit} arrays and objects")
    assert reasons <= expected and bool(reasons) == bool(expected), (depth, count, reasons)


# --- the encodings a body may come in ----------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["utf-8", "utf-8-sig", "utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le"])
def test_a_body_parses_in_every_encoding_json_detects(encoding: str):
    """An object's bytes in any encoding ``json.loads`` detects parse to the same message (the
    UTF-8 shortcut is taken only when that detection would say UTF-8: a NUL after the brace is UTF-16)."""
    message = {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"text": "é \U0001f600"}}
    assert decode(json.dumps(message, ensure_ascii=False).encode(encoding)) == message


def test_bytes_that_are_not_utf8_are_a_parse_error():
    assert refusal(b'{"text": "\xff"}') == "Parse error: the body is not valid JSON"
    assert decode('{"a": "\ud800"}'.encode("utf-8", "surrogatepass")) == {"a": "\ud800"}  # as json.loads reads them


# --- what json.loads accepts around an object ------------------------------------------------------
@pytest.mark.parametrize("text", [
    '{"a": 1}', '{"a": 1} \t\r\n', ' {"a": 1}', '{"a": 1}\x0b', '{"a": 1}\u3000', '{"a": 1} x', '{"a": 1}{}',
    '{"a": 1', '{', '{}', '{"a": NaN}', '{"a": [1, {"b": "}"}]}\n', '\ufeff{"a": 1}',
])
def test_an_object_is_parsed_exactly_as_json_loads_parses_it(text: str):
    """JSON whitespace only (space, tab, CR, LF) may follow the object; other trailing text, a
    second value, or a cut-off object is a parse error, whether the body comes as bytes or text."""
    for data in (text, text.encode()):  # as bytes, a byte order mark is json.loads' encoding hint
        try:
            expected: Any = json.loads(data)
        except ValueError:
            expected = "Parse error: the body is not valid JSON"
        try:
            assert decode(data) == expected
        except MCPError as refused:
            assert str(refused) == expected
