"""A server's text, made safe to print on a terminal.

Every string a server sends is its own choice: its name, a question and its fields, a link, a
tool's result, a log line, a refusal. Printed as it is, an escape sequence inside would be obeyed
by the terminal: OSC 0 retitles the window, OSC 52 writes the clipboard, CSI moves the cursor and
erases lines, so a hostile server could overwrite the lines that say who asks and which domain a
link leads to. A carriage return rewrites its own line from the start, and a bidirectional
override shows characters in another order than they are. What prints a server's text passes it
through one of these functions first:

- ``printable(text)``: the text without control sequences, control characters and bidi controls;
  newlines (and tabs) stay only with ``lines=True``, where the layout has room for several lines;
- ``visible_url(url)``: a link with those characters percent-encoded, so that the link shown is
  the very link a browser would be given;
- ``printable_json(value)``: JSON whose strings carry those characters as ``\\uXXXX`` escapes,
  still the same JSON, nothing lost.
"""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import quote

__all__ = ["printable", "printable_json", "visible_url"]

#: A terminal's control sequences, 7-bit (ESC ...) and 8-bit (C1), each removed whole: CSI (cursor,
#: erase, colour), OSC (title, clipboard, hyperlink) up to its BEL or ST, DCS/SOS/PM/APC strings up
#: to their ST, and the two- and three-character escapes (ESC 7, ESC ( B). An unterminated string
#: runs to the end of the text, as the terminal would swallow it.
_SEQUENCE = re.compile(
    r"""
      (?:\x1b\[|\x9b) [0-?]* [\ -/]* [@-~]?                       # CSI
    | (?:\x1b\]|\x9d) [^\x07\x1b\x9c]* (?:\x07|\x1b\\|\x9c)?     # OSC
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f]) .*? (?:\x1b\\|\x9c|\Z)   # DCS, SOS, PM, APC
    | \x1b [\ -/]* [0-~]?                                        # any other escape
    """,
    re.VERBOSE | re.DOTALL,
)
#: Characters a terminal acts on rather than shows: C0 (but newline and tab), DEL, C1, and the
#: bidirectional marks, embeddings, overrides and isolates; the Unicode line and paragraph separators.
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]"
_REMOVED = re.compile(_CONTROL)
_IN_URL = re.compile(f"{_CONTROL}|[\n\t\u2028\u2029 ]")
_IN_JSON = re.compile(f"{_CONTROL}|[\u2028\u2029]")
_LINE_BREAK = re.compile("\r\n|[\u2028\u2029]")
_SPACE = re.compile("[\n\t]")


def printable(text: str, lines: bool = False) -> str:
    """``text`` with nothing in it that a terminal would obey; ``lines=True`` keeps its newlines and
    tabs, otherwise each becomes a space (a name, a cell, a prompt: one line of the layout)."""
    text = _REMOVED.sub("", _SEQUENCE.sub("", _LINE_BREAK.sub("\n", text)))
    return text if lines else _SPACE.sub(" ", text)


def visible_url(url: str) -> str:
    """``url`` with each control or bidi character, and any whitespace, percent-encoded: the link
    shown is the link opened, and a browser given it reads those characters as data."""
    return _IN_URL.sub(lambda found: quote(found.group(), safe=""), url)


def printable_json(value: Any, indent: int | None = 2) -> str:
    """``value`` as JSON that keeps non-ASCII text readable but escapes what a terminal would obey
    (``json.dumps`` escapes C0 controls itself, not C1 or the bidi controls)."""
    dumped = json.dumps(value, indent=indent, ensure_ascii=False)
    return _IN_JSON.sub(lambda found: f"\\u{ord(found.group()):04x}", dumped)
