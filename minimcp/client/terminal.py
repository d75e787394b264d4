"""A ready ``elicitation_callback`` that asks the user on a terminal.

``Client(url, elicitation_callback=terminal_elicitation)`` is enough for a command-line client: a
form question becomes one prompt per field, a URL question shows the link and asks for consent.
``TerminalElicitation(input=..., output=..., open_browser=True)`` builds one on other streams.

What the specification asks of a client, and where it happens here:

- the user may review and edit the answers before they are sent: the summary step;
- the asking server is named before its question (when the session knows its name);
- decline and cancel are always available: ``:decline`` / ``:cancel`` at any prompt, EOF and
  Ctrl-C cancel;
- the client should validate input against the schema: every field is checked as it is typed and
  re-asked with the reason, so the server receives correctly typed values;
- URL mode: the full URL is shown with its domain highlighted and a warning for punycode, the URL
  is never fetched, and the browser opens only after the user said yes.

Everything the server wrote (its name, the message, titles, descriptions, choices, defaults, the
link) reaches the terminal through ``printable``: no escape sequence of the server's can retitle
the window, fill the clipboard or overwrite the lines that name the asker and the link's domain.

This module knows nothing of transports or sessions; it turns ``params`` into an ``ElicitResult``.
"""

from __future__ import annotations

import datetime
import math
import re
import sys
import threading
import webbrowser
from dataclasses import dataclass, field
from typing import Any, Literal, TextIO
from urllib.parse import urlsplit

from minimcp.client.printable import printable, visible_url
from minimcp.client.session import ClientRequestContext
from minimcp.types import ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult

__all__ = ["TerminalElicitation", "terminal_elicitation"]

DECLINE = ":decline"
CANCEL = ":cancel"

_MISSING: Any = object()
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_DATE_TIME = re.compile(r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$")
_YES = frozenset({"y", "yes", "true", "1"})
_NO = frozenset({"n", "no", "false", "0"})
_BOLD, _RESET = "\x1b[1m", "\x1b[0m"
_LOOPBACK = frozenset({"localhost", "127.0.0.1", "::1"})  # plain HTTP there never leaves the machine
#: The choices listed under a question; past these, the user types one by its value or title.
CHOICES_LISTED = 50


class _Finish(Exception):
    """Raised from any prompt to end the form at once with ``action`` (decline or cancel)."""

    def __init__(self, action: Literal["decline", "cancel"]) -> None:
        super().__init__(action)
        self.action: Literal["decline", "cancel"] = action


class _Invalid(ValueError):
    """An answer that does not fit its field; the message is shown to the user before re-asking."""


@dataclass
class _Choice:
    value: str
    label: str

    def __post_init__(self) -> None:
        self.label = printable(self.label)  # one line of the list, and what the user may type back


@dataclass
class _Field:
    """One property of ``requested_schema``, normalized so every enum variant looks the same."""

    name: str
    kind: str  # "string" | "integer" | "number" | "boolean" | "single" | "multi"
    label: str
    description: str | None
    required: bool
    default: Any
    schema: dict[str, Any]
    choices: list[_Choice] = field(default_factory=list)


def _titled(options: list[Any]) -> list[_Choice]:
    """``[{const, title}]`` options; entries without a ``const`` cannot be answered and are skipped."""
    return [_Choice(str(o["const"]), str(o.get("title", o["const"])))
            for o in options if isinstance(o, dict) and "const" in o]


def _choices_of(schema: dict[str, Any]) -> list[_Choice] | None:
    """The options of a single-select string (``enum``, ``enum``+``enumNames`` or ``oneOf``), if any."""
    if isinstance(schema.get("oneOf"), list):
        return _titled(schema["oneOf"])
    if isinstance(schema.get("enum"), list):
        names = schema.get("enumNames")
        if isinstance(names, list) and len(names) == len(schema["enum"]):
            return [_Choice(str(v), str(n)) for v, n in zip(schema["enum"], names)]
        return [_Choice(str(v), str(v)) for v in schema["enum"]]
    return None


def _parse_field(name: str, schema: dict[str, Any], required: bool) -> _Field:
    kind = schema.get("type", "string")
    choices: list[_Choice] | None = None
    if kind == "array":
        items = schema.get("items") or {}
        if isinstance(items.get("anyOf"), list):
            choices = _titled(items["anyOf"])
        else:
            choices = _choices_of(items) or []
        kind = "multi"
    elif kind == "string":
        choices = _choices_of(schema)
        if choices is not None:
            kind = "single"
    elif kind not in ("integer", "number", "boolean"):
        kind = "string"  # not a PrimitiveSchemaDefinition; free text is the least surprising answer
    return _Field(
        name=name,
        kind=kind,
        label=printable(str(schema.get("title") or name)),
        description=schema.get("description"),
        required=required,
        default=schema.get("default", _MISSING),
        schema=schema,
        choices=choices or [],
    )


def _fields_of(requested_schema: dict[str, Any]) -> list[_Field]:
    required = set(requested_schema.get("required") or [])
    properties = requested_schema.get("properties") or {}
    return [_parse_field(name, prop or {}, name in required) for name, prop in properties.items()]


# --- checking one answer ------------------------------------------------------------------------
def _check_string(f: _Field, text: str) -> str:
    s = f.schema
    if "minLength" in s and len(text) < s["minLength"]:
        raise _Invalid(f"must be at least {s['minLength']} characters long")
    if "maxLength" in s and len(text) > s["maxLength"]:
        raise _Invalid(f"must be at most {s['maxLength']} characters long")
    fmt = s.get("format")
    if fmt == "email" and not _EMAIL.match(text):
        raise _Invalid("expected an email address like name@example.com")
    if fmt == "uri" and not _URI.match(text):
        raise _Invalid("expected an absolute URI like https://example.com/page")
    if fmt == "date":
        try:
            if not _DATE.match(text):
                raise ValueError(text)
            datetime.date.fromisoformat(text)
        except ValueError:
            raise _Invalid("expected a date like 2025-12-26 (YYYY-MM-DD)") from None
    if fmt == "date-time":
        try:
            if not _DATE_TIME.match(text):
                raise ValueError(text)
            # Python 3.10's fromisoformat knows neither "Z" nor a lowercase "t".
            datetime.datetime.fromisoformat(re.sub(r"[Zz]$", "+00:00", text.replace("t", "T")))
        except ValueError:
            raise _Invalid("expected a date and time with offset like 2025-12-26T19:30:00Z") from None
    return text


def _check_number(f: _Field, text: str) -> int | float:
    value: int | float
    try:
        value = int(text)
    except ValueError:
        if f.kind == "integer":
            raise _Invalid("expected a whole number") from None
        try:
            value = float(text)
        except ValueError:
            raise _Invalid("expected a number") from None
        if not math.isfinite(value):
            raise _Invalid("expected a finite number") from None
    s = f.schema
    if "minimum" in s and value < s["minimum"]:
        raise _Invalid(f"must be at least {s['minimum']}")
    if "maximum" in s and value > s["maximum"]:
        raise _Invalid(f"must be at most {s['maximum']}")
    return value


def _check_boolean(text: str) -> bool:
    lowered = text.lower()
    if lowered in _YES:
        return True
    if lowered in _NO:
        return False
    raise _Invalid("answer y or n")


def _pick(f: _Field, token: str) -> str:
    """One choice by its number, its value or its title (case-insensitive)."""
    if token.isdigit() and 1 <= int(token) <= len(f.choices):
        return f.choices[int(token) - 1].value
    for choice in f.choices:
        if token.lower() in (choice.value.lower(), choice.label.lower()):
            return choice.value
    raise _Invalid(f"{token!r} is not one of the choices 1-{len(f.choices)}")


def _check_multi(f: _Field, tokens: list[str]) -> list[str]:
    picked: list[str] = []
    for token in tokens:
        value = _pick(f, token)
        if value not in picked:
            picked.append(value)
    s = f.schema
    if "minItems" in s and len(picked) < s["minItems"]:
        raise _Invalid(f"choose at least {s['minItems']}")
    if "maxItems" in s and len(picked) > s["maxItems"]:
        raise _Invalid(f"choose at most {s['maxItems']}")
    return picked


def _parse_answer(f: _Field, text: str) -> Any:
    """Turn non-empty typed text into the field's JSON value, or raise ``_Invalid`` with the reason."""
    if f.kind == "boolean":
        return _check_boolean(text)
    if f.kind in ("integer", "number"):
        return _check_number(f, text)
    if f.kind == "single":
        return _pick(f, text)
    if f.kind == "multi":
        return _check_multi(f, [t.strip() for t in text.split(",") if t.strip()])
    return _check_string(f, text)


def _show(f: _Field, value: Any) -> str:
    """A value as the user would recognise it: titles for choices, yes/no for booleans."""
    if value is _MISSING:
        return "(left empty)"
    if f.kind == "boolean":
        return "yes" if value else "no"
    titles = {c.value: c.label for c in f.choices}
    if f.kind == "single":
        return titles.get(value, str(value))
    if f.kind == "multi":
        return ", ".join(titles.get(v, str(v)) for v in value) or "(none)"
    return str(value)


def _hint(f: _Field, current: Any) -> str:
    """What the prompt says it expects, including what Enter does."""
    if f.kind == "boolean":
        if current is _MISSING:
            return "y/n"
        return "Y/n" if current else "y/N"
    parts: list[str] = []
    s = f.schema
    if f.kind == "multi":
        parts.append("numbers separated by commas")
        if "minItems" in s or "maxItems" in s:
            parts.append(f"{s.get('minItems', 0)}-{s.get('maxItems', len(f.choices))} choices")
    elif f.kind == "single":
        parts.append(f"1-{len(f.choices)}")
    elif f.kind in ("integer", "number"):
        parts.append("whole number" if f.kind == "integer" else "number")
        if "minimum" in s or "maximum" in s:
            parts.append(f"{s.get('minimum', '-inf')}..{s.get('maximum', 'inf')}")
    else:
        if s.get("format"):
            parts.append(str(s["format"]))
        if "minLength" in s or "maxLength" in s:
            parts.append(f"{s.get('minLength', 0)}-{s.get('maxLength', 'any')} characters")
    if current is not _MISSING:
        parts.append(f"Enter = {_show(f, current)}")
    elif not f.required:
        parts.append("Enter = leave empty")
    return ", ".join(parts)


# --- the callback ---------------------------------------------------------------------------------
class TerminalElicitation:
    """An ``elicitation_callback`` that asks on a terminal; one instance may serve many clients.

    ``input``/``output`` default to ``sys.stdin``/``sys.stdout`` looked up at call time (not at
    construction), so a redirected or captured ``sys.stdout`` is honoured. When both are the real
    terminal, the builtin ``input()`` reads the answers, which gives line editing and history.
    ``open_browser=True`` opens a URL-mode link with ``webbrowser.open`` once the user agreed.
    Calls on one instance take turns (a lock), so two questions arriving at once from threads
    never interleave their prompts on the same terminal.
    """

    def __init__(self, input: TextIO | None = None, output: TextIO | None = None,
                 open_browser: bool = False) -> None:
        self._input = input
        self._output = output
        self.open_browser = open_browser
        # _turn: one question at a time on the terminal, so prompts of two threads never interleave.
        self._turn = threading.Lock()

    def __call__(self, context: ClientRequestContext | None,
                 params: ElicitRequestFormParams | ElicitRequestURLParams) -> ElicitResult:
        with self._turn:
            return self._ask_user(context, params)

    def _ask_user(self, context: ClientRequestContext | None,
                  params: ElicitRequestFormParams | ElicitRequestURLParams) -> ElicitResult:
        try:
            self._introduce(context)
            if isinstance(params, ElicitRequestURLParams):
                return self._url(params)
            return self._form(params)
        except KeyboardInterrupt:  # Ctrl-C may land while printing as well as while reading
            self._say()
            action: Literal["decline", "cancel"] = "cancel"
        except _Finish as finished:
            action = finished.action
        self._say("(cancelled)" if action == "cancel" else "(declined)")
        return ElicitResult(action=action)

    # --- I/O ---------------------------------------------------------------------------------------
    @property
    def _in(self) -> TextIO:
        return self._input if self._input is not None else sys.stdin

    @property
    def _out(self) -> TextIO:
        return self._output if self._output is not None else sys.stdout

    def _say(self, text: str = "", emphasis: str = "", tail: str = "") -> None:
        """Lines for the user, free of any control sequence the server put in them; ``emphasis`` (then
        ``tail``) ends the line, on one line and in bold on a terminal: who asks, which domain."""
        shown = printable(emphasis)
        isatty = getattr(self._out, "isatty", None)
        if shown and isatty is not None and isatty():
            shown = f"{_BOLD}{shown}{_RESET}"
        self._out.write(printable(text, lines=True) + shown + printable(tail) + "\n")
        self._out.flush()

    def _read(self, prompt: str) -> str:
        """One line from the user; the control words and EOF end the whole question."""
        prompt = printable(prompt)
        try:
            if self._in is sys.stdin and self._out is sys.stdout and sys.stdin.isatty() and sys.stdout.isatty():
                line = input(prompt)
            else:
                self._out.write(prompt)
                self._out.flush()
                line = self._in.readline()
                if not line:
                    raise EOFError
        except EOFError:
            self._say()
            raise _Finish("cancel") from None
        answer = line.strip()
        if answer.lower() == DECLINE:
            raise _Finish("decline")
        if answer.lower() == CANCEL:
            raise _Finish("cancel")
        return answer

    def _introduce(self, context: ClientRequestContext | None) -> None:
        """Name the asking server first: the user must know who wants the answer (protocol.md §4.4)."""
        info = context.session.server_info if context is not None else None
        if info is not None:
            self._say("Question from server ", emphasis=info.title or info.name, tail=":")

    # --- form mode ---------------------------------------------------------------------------------
    def _form(self, params: ElicitRequestFormParams) -> ElicitResult:
        fields = _fields_of(params.requested_schema)
        self._say(params.message)
        self._say(f"(type {DECLINE} to decline or {CANCEL} to cancel at any prompt; Enter accepts a default)")
        answers: dict[str, Any] = {f.name: f.default for f in fields}
        while True:
            for f in fields:
                answers[f.name] = self._ask(f, answers[f.name])
            if self._review(fields, answers):
                content = {name: value for name, value in answers.items() if value is not _MISSING}
                return ElicitResult(action="accept", content=content)

    def _ask(self, f: _Field, current: Any) -> Any:
        """Ask one field until the answer fits; ``current`` (default or earlier answer) is Enter's."""
        self._say()
        heading = f.label + (" (required)" if f.required else " (optional)")
        self._say(heading + (f": {f.description}" if f.description else ""))
        for number, choice in enumerate(f.choices[:CHOICES_LISTED], 1):
            self._say(f"  {number}) {choice.label}")
        if len(f.choices) > CHOICES_LISTED:
            self._say(f"  ... {len(f.choices) - CHOICES_LISTED:,} more: type a number up to {len(f.choices):,}, "
                      "or a choice's value or title")
        while True:
            text = self._read(f"  [{_hint(f, current)}] > ")
            if not text:
                if current is not _MISSING:
                    return current
                if not f.required:
                    return _MISSING
                if f.kind == "multi" and f.schema.get("minItems", 0) == 0:
                    return []
                self._say("  a value is required")
                continue
            try:
                return _parse_answer(f, text)
            except _Invalid as invalid:
                self._say(f"  {invalid}")

    def _review(self, fields: list[_Field], answers: dict[str, Any]) -> bool:
        """Show what will be sent; True to send, False to edit again from the top."""
        self._say()
        self._say("You are about to send:")
        for f in fields:
            self._say(f"  {f.label}: {_show(f, answers[f.name])}")
        while True:
            choice = self._read(f"Send? [Enter = send, e = edit, {DECLINE}, {CANCEL}] > ").lower()
            if choice in ("", "y", "yes", "s", "send"):
                return True
            if choice in ("e", "edit"):
                return False
            self._say("  press Enter to send or type e to edit")

    # --- URL mode ----------------------------------------------------------------------------------
    def _url(self, params: ElicitRequestURLParams) -> ElicitResult:
        self._say(params.message)
        self._say("The server asks you to open this page (it has not been fetched):")
        url = visible_url(params.url)  # what is shown is what opens
        self._say(f"  {url}")
        parts = urlsplit(url)
        host = parts.hostname or "(no host)"
        self._say("  domain: ", emphasis=host)
        if any(label.startswith("xn--") for label in host.split(".")):
            self._say(f"  WARNING: the domain is punycode; it displays as {_unicode_host(host)!r}. "
                      "Check that it is the site you expect.")
        elif not host.isascii():
            self._say(f"  WARNING: the domain contains non-ASCII characters ({_punycode_host(host)}). "
                      "Check that it is the site you expect.")
        if parts.scheme != "https" and host not in _LOOPBACK:
            self._say(f"  note: the page is not served over HTTPS ({parts.scheme or 'no scheme'})")
        while True:
            answer = self._read("Open it and continue? [y/n] > ").lower()
            if answer in _YES:
                if self.open_browser:
                    webbrowser.open(url)
                return ElicitResult(action="accept")
            if answer in _NO:
                return ElicitResult(action="decline")
            self._say("  answer y or n")


def _unicode_host(host: str) -> str:
    """The punycode host as a browser might display it, so the user sees what it imitates."""
    try:
        return host.encode("ascii").decode("idna")
    except UnicodeError:
        return host


def _punycode_host(host: str) -> str:
    """The ASCII form of an internationalized host, which exposes look-alike letters."""
    try:
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host.encode("ascii", "backslashreplace").decode("ascii")


terminal_elicitation = TerminalElicitation()
"""The ready callback: ``Client(url, elicitation_callback=terminal_elicitation)``."""
