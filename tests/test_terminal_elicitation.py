"""The terminal elicitation callback, driven through injected streams and once through a real pty.

Every test types whole lines, exactly as a user would, and checks both the ``ElicitResult`` and
what the user was shown (reasons for rejected answers, titles of choices, the URL's domain).
"""

from __future__ import annotations

import io
import json
import socket
import sys
import textwrap
import threading
from typing import Any

import pytest
from conftest import load_example
from terminal_support import Terminal

from minimcp import Client
from minimcp.client.terminal import TerminalElicitation, terminal_elicitation
from minimcp.types import ElicitRequestFormParams, ElicitRequestURLParams, ElicitResult



def ask_form(schema: dict[str, Any], *lines: str, message: str = "Tell me more") -> tuple[ElicitResult, str]:
    """Answer a form with ``lines`` (no trailing EOF unless the lines run out); return result and screen."""
    out = io.StringIO()
    ask = TerminalElicitation(input=io.StringIO("".join(line + "\n" for line in lines)), output=out)
    result = ask(None, ElicitRequestFormParams(message=message, requested_schema=schema))
    return result, out.getvalue()


def ask_url(url: str, *lines: str, **options: Any) -> tuple[ElicitResult, str]:
    out = io.StringIO()
    ask = TerminalElicitation(input=io.StringIO("".join(line + "\n" for line in lines)), output=out, **options)
    params = ElicitRequestURLParams(message="A 20 EUR deposit confirms your booking.", url=url,
                                    elicitation_id="deposit-42")
    return ask(None, params), out.getvalue()


def obj(properties: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required is not None:
        schema["required"] = required
    return schema


# --- form mode: field types -------------------------------------------------------------------
def test_seed_schema_with_default_via_enter() -> None:
    schema = {
        "properties": {
            "accept_alternative": {"description": "Try another date?", "title": "Accept Alternative",
                                   "type": "boolean"},
            "date": {"default": "2025-12-26", "description": "Alternative date (YYYY-MM-DD)", "title": "Date",
                     "type": "string"},
        },
        "required": ["accept_alternative"], "title": "AlternativeDate", "type": "object",
    }
    result, screen = ask_form(schema, "y", "", "", message="No tables for 2 on 2025-12-25.")
    assert result == ElicitResult(action="accept", content={"accept_alternative": True, "date": "2025-12-26"})
    assert screen.startswith("No tables for 2 on 2025-12-25.\n")
    assert "Accept Alternative (required): Try another date?" in screen
    assert "Date (optional): Alternative date (YYYY-MM-DD)" in screen
    assert "Enter = 2025-12-26" in screen
    assert screen.count("to cancel at any prompt") == 1


def test_untouched_defaults_are_sent_with_their_types() -> None:
    """The conformance harness's SEP-1034 check: accepting untouched defaults sends each, typed."""
    schema = obj({
        "name": {"type": "string", "default": "John Doe"},
        "age": {"type": "integer", "default": 30},
        "score": {"type": "number", "default": 95.5},
        "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
        "verified": {"type": "boolean", "default": True},
    })
    result, screen = ask_form(schema, "", "", "", "", "", "")
    assert result.content == {"name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": True}
    assert [type(v) for v in result.content.values()] == [str, int, float, str, bool]
    assert "[Y/n" in screen
    wire = json.loads(result.model_dump_json(by_alias=True, exclude_none=True))
    assert wire == {"action": "accept", "content": result.content}


def test_numbers_and_booleans_are_typed() -> None:
    schema = obj({
        "guests": {"type": "integer", "minimum": 1, "maximum": 8},
        "budget": {"type": "number", "minimum": 0},
        "vegan": {"type": "boolean"},
        "terrace": {"type": "boolean", "default": False},
    }, ["guests", "budget", "vegan"])
    result, screen = ask_form(schema, "4", "12.5", "no", "", "")
    assert result.content == {"guests": 4, "budget": 12.5, "vegan": False, "terrace": False}
    assert isinstance(result.content["guests"], int) and isinstance(result.content["vegan"], bool)
    assert "[whole number, 1..8]" in screen
    assert "[y/N] > " in screen


def test_untitled_single_select_by_number_or_value() -> None:
    schema = obj({"color": {"type": "string", "enum": ["red", "green", "blue"]}}, ["color"])
    result, screen = ask_form(schema, "2", "")
    assert result.content == {"color": "green"}
    assert "  1) red\n  2) green\n  3) blue\n" in screen
    assert ask_form(schema, "Blue", "")[0].content == {"color": "blue"}


def test_a_huge_enum_lists_its_first_choices_and_takes_any_by_value_or_number() -> None:
    values = [f"model_{number}" for number in range(400_000)]
    schema = obj({"model": {"type": "string", "enum": values}}, ["model"])
    result, screen = ask_form(schema, "model_399999", "")
    assert result.content == {"model": "model_399999"}
    listed = [line for line in screen.splitlines() if line.startswith("  ") and ") model_" in line]
    assert listed == [f"  {number + 1}) model_{number}" for number in range(50)]
    assert "  ... 399,950 more: type a number up to 400,000, or a choice's value or title\n" in screen
    assert len(screen.splitlines()) < 70
    assert ask_form(schema, "400000", "")[0].content == {"model": "model_399999"}


def test_titled_single_select_shows_titles_and_returns_const() -> None:
    schema = obj({"table": {"type": "string", "title": "Table", "oneOf": [
        {"const": "t1", "title": "By the window"}, {"const": "t2", "title": "On the terrace"}]}}, ["table"])
    result, screen = ask_form(schema, "2", "")
    assert result.content == {"table": "t2"}
    assert "  1) By the window\n  2) On the terrace\n" in screen
    assert "  Table: On the terrace" in screen


def test_legacy_enum_names() -> None:
    schema = obj({"size": {"type": "string", "enum": ["s", "m", "l"], "enumNames": ["Small", "Medium", "Large"],
                           "default": "m"}})
    result, screen = ask_form(schema, "", "")
    assert result.content == {"size": "m"}
    assert "  2) Medium\n" in screen and "Enter = Medium" in screen
    assert ask_form(schema, "large", "")[0].content == {"size": "l"}


def test_untitled_multi_select_respects_min_and_max_items() -> None:
    schema = obj({"toppings": {"type": "array", "minItems": 1, "maxItems": 2,
                               "items": {"type": "string", "enum": ["cheese", "ham", "olives"]}}}, ["toppings"])
    result, screen = ask_form(schema, "", "1,2,3", "9", "3, 1", "")
    assert result.content == {"toppings": ["olives", "cheese"]}
    assert "  choose at least 1" not in screen  # Enter on a required field asks for a value instead
    assert "  a value is required" in screen
    assert "  choose at most 2" in screen
    assert "  '9' is not one of the choices 1-3" in screen
    assert "1-2 choices" in screen


def test_titled_multi_select_and_its_default() -> None:
    schema = obj({"days": {"type": "array", "title": "Days", "default": ["mon"],
                           "items": {"anyOf": [{"const": "mon", "title": "Monday"},
                                               {"const": "tue", "title": "Tuesday"}]}}})
    result, screen = ask_form(schema, "", "")
    assert result.content == {"days": ["mon"]}
    assert "Enter = Monday" in screen
    result, screen = ask_form(schema, "2,1", "")
    assert result.content == {"days": ["tue", "mon"]}
    assert "  Days: Tuesday, Monday" in screen


def test_required_multi_select_without_min_items_may_be_empty() -> None:
    schema = obj({"tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}}, ["tags"])
    assert ask_form(schema, "", "")[0].content == {"tags": []}


def test_optional_field_left_empty_is_omitted() -> None:
    schema = obj({"name": {"type": "string"}, "note": {"type": "string", "description": "Anything else?"}},
                 ["name"])
    result, screen = ask_form(schema, "Ada", "", "")
    assert result.content == {"name": "Ada"}
    assert "note (optional): Anything else?" in screen
    assert "  note: (left empty)" in screen


# --- form mode: invalid answers are re-asked with the reason -----------------------------------
@pytest.mark.parametrize(("prop", "bad", "reason", "good", "value"), [
    ({"type": "integer"}, "1.5", "expected a whole number", "2", 2),
    ({"type": "integer", "minimum": 1}, "0", "must be at least 1", "1", 1),
    ({"type": "number", "maximum": 9.5}, "10", "must be at most 9.5", "9.5", 9.5),
    ({"type": "number"}, "lots", "expected a number", "-3", -3),
    ({"type": "number"}, "nan", "expected a finite number", "1e3", 1000.0),
    ({"type": "boolean"}, "maybe", "answer y or n", "TRUE", True),
    ({"type": "string", "minLength": 3}, "ab", "must be at least 3 characters long", "abc", "abc"),
    ({"type": "string", "maxLength": 2}, "abc", "must be at most 2 characters long", "ab", "ab"),
    ({"type": "string", "format": "email"}, "ada@", "expected an email address", "ada@example.com",
     "ada@example.com"),
    ({"type": "string", "format": "uri"}, "example.com", "expected an absolute URI", "https://example.com/x",
     "https://example.com/x"),
    ({"type": "string", "format": "date"}, "2025-02-30", "expected a date like 2025-12-26", "2025-02-28",
     "2025-02-28"),
    ({"type": "string", "format": "date"}, "20250228", "expected a date like 2025-12-26", "2024-02-29",
     "2024-02-29"),
    ({"type": "string", "format": "date-time"}, "2025-12-26 19:30", "expected a date and time with offset",
     "2025-12-26T19:30:00Z", "2025-12-26T19:30:00Z"),
    ({"type": "string", "format": "date-time"}, "2025-12-26T25:00:00Z", "expected a date and time with offset",
     "2025-12-26T19:30:00.5+01:00", "2025-12-26T19:30:00.5+01:00"),
    ({"type": "string", "enum": ["a", "b"]}, "3", "'3' is not one of the choices 1-2", "b", "b"),
])
def test_invalid_then_valid(prop: dict[str, Any], bad: str, reason: str, good: str, value: Any) -> None:
    result, screen = ask_form(obj({"x": prop}, ["x"]), bad, good, "")
    assert result.content == {"x": value}
    assert type(result.content["x"]) is type(value)
    assert f"  {reason}" in screen
    assert screen.count("[") - screen.count("[Enter = send") >= 2  # the field's prompt was shown twice


def test_required_field_cannot_be_left_empty() -> None:
    result, screen = ask_form(obj({"name": {"type": "string"}}, ["name"]), "", "Ada", "")
    assert result.content == {"name": "Ada"}
    assert "  a value is required" in screen


def test_unknown_field_type_is_asked_as_text() -> None:
    result, _ = ask_form(obj({"odd": {"type": "object"}}, ["odd"]), "hello", "")
    assert result.content == {"odd": "hello"}


def test_empty_form_still_asks_for_confirmation() -> None:
    result, screen = ask_form({"type": "object", "properties": {}}, "")
    assert result == ElicitResult(action="accept", content={})
    assert "You are about to send:" in screen


# --- form mode: decline, cancel, EOF, Ctrl-C -------------------------------------------------------
SCHEMA = obj({"name": {"type": "string"}, "age": {"type": "integer"}}, ["name", "age"])


@pytest.mark.parametrize(("lines", "action"), [
    ((":decline",), "decline"),
    (("Ada", ":cancel"), "cancel"),
    (("Ada", "30", ":DECLINE"), "decline"),  # at the summary, case-insensitive
    (("Ada", "30", " :cancel "), "cancel"),
])
def test_decline_and_cancel_at_any_prompt(lines: tuple[str, ...], action: str) -> None:
    result, screen = ask_form(SCHEMA, *lines)
    assert result == ElicitResult(action=action)
    assert result.content is None
    assert screen.rstrip().endswith("(declined)" if action == "decline" else "(cancelled)")


@pytest.mark.parametrize("lines", [(), ("Ada",), ("Ada", "30")])
def test_eof_cancels(lines: tuple[str, ...]) -> None:
    assert ask_form(SCHEMA, *lines)[0] == ElicitResult(action="cancel")


def test_ctrl_c_cancels() -> None:
    class Interrupting(io.StringIO):
        def readline(self, size: int | None = -1) -> str:
            raise KeyboardInterrupt

    out = io.StringIO()
    ask = TerminalElicitation(input=Interrupting(), output=out)
    result = ask(None, ElicitRequestFormParams(message="Hi", requested_schema=SCHEMA))
    assert result == ElicitResult(action="cancel")


# --- form mode: the review step ------------------------------------------------------------------
def test_summary_then_edit_from_the_top_keeps_earlier_answers_as_defaults() -> None:
    schema = obj({
        "name": {"type": "string", "title": "Name"},
        "age": {"type": "integer", "title": "Age"},
        "color": {"type": "string", "title": "Color", "oneOf": [{"const": "r", "title": "Red"},
                                                                 {"const": "g", "title": "Green"}]},
    }, ["name", "age", "color"])
    result, screen = ask_form(schema, "Ada", "36", "1", "what", "e", "", "37", "", "")
    assert result.content == {"name": "Ada", "age": 37, "color": "r"}
    assert "  press Enter to send or type e to edit" in screen
    first, second = screen.split("You are about to send:")[1:]
    assert "  Name: Ada\n  Age: 36\n  Color: Red\n" in first
    assert "  Name: Ada\n  Age: 37\n  Color: Red\n" in second
    assert "[Enter = Ada] > " in screen and "[whole number, Enter = 36] > " in screen
    assert screen.count("to cancel at any prompt") == 1


# --- URL mode --------------------------------------------------------------------------------------
@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything tries to connect: a URL question must never be prefetched."""

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the URL was fetched")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.mark.parametrize(("answers", "action"), [
    (("y",), "accept"), (("YES",), "accept"), (("n",), "decline"), (("", "n"), "decline"),
    ((), "cancel"), (("maybe",), "cancel"), ((":cancel",), "cancel"), ((":decline",), "decline"),
])
def test_url_mode(no_network: None, answers: tuple[str, ...], action: str) -> None:
    result, screen = ask_url("https://pay.example.com/deposit/42?x=1", *answers)
    assert result == ElicitResult(action=action)
    assert result.content is None
    assert "A 20 EUR deposit confirms your booking.\n" in screen
    assert "  https://pay.example.com/deposit/42?x=1\n" in screen
    assert "  domain: pay.example.com\n" in screen
    assert "WARNING" not in screen and "HTTPS" not in screen


def test_url_mode_highlights_the_real_host_not_the_userinfo(no_network: None) -> None:
    _, screen = ask_url("https://pay.example.com@evil.test/deposit", "n")
    assert "  domain: evil.test\n" in screen


def test_url_mode_bold_domain_on_a_terminal(no_network: None) -> None:
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    out = Tty()
    ask = TerminalElicitation(input=io.StringIO("n\n"), output=out)
    ask(None, ElicitRequestURLParams(message="m", url="https://pay.example.com/x", elicitation_id="e"))
    assert "  domain: \x1b[1mpay.example.com\x1b[0m\n" in out.getvalue()


def test_url_mode_warns_on_punycode_and_plain_http(no_network: None) -> None:
    result, screen = ask_url("http://xn--pypal-4ve.com/login", "n")
    assert result.action == "decline"
    assert "WARNING: the domain is punycode; it displays as 'pаypal.com'" in screen
    assert "note: the page is not served over HTTPS (http)" in screen


def test_url_mode_plain_http_on_loopback_needs_no_note(no_network: None) -> None:
    _, screen = ask_url("http://127.0.0.1:8000/pay?booking=42", "n")
    assert "  domain: 127.0.0.1\n" in screen and "HTTPS" not in screen


def test_url_mode_warns_on_non_ascii_host(no_network: None) -> None:
    _, screen = ask_url("https://pаypal.com/login", "n")
    assert "WARNING: the domain contains non-ASCII characters (xn--pypal-4ve.com)" in screen


def test_url_mode_opens_the_browser_only_after_consent(no_network: None, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: opened.append(url) or True)
    ask_url("https://pay.example.com/deposit/42", "n", open_browser=True)
    assert opened == []
    ask_url("https://pay.example.com/deposit/42", "y", open_browser=False)
    assert opened == []
    result, _ = ask_url("https://pay.example.com/deposit/42", "y", open_browser=True)
    assert result.action == "accept"
    assert opened == ["https://pay.example.com/deposit/42"]


# --- the default instance ---------------------------------------------------------------------------
def test_default_instance_uses_the_current_std_streams(monkeypatch: pytest.MonkeyPatch) -> None:
    out = io.StringIO()
    monkeypatch.setattr(sys, "stdin", io.StringIO("Ada\n41\n\n"))
    monkeypatch.setattr(sys, "stdout", out)
    result = terminal_elicitation(None, ElicitRequestFormParams(message="Who?", requested_schema=SCHEMA))
    assert result.content == {"name": "Ada", "age": 41}
    assert out.getvalue().startswith("Who?\n")


# --- a real terminal ----------------------------------------------------------------------------------
PTY_SCRIPT = textwrap.dedent("""
    import json, sys
    from minimcp.client.terminal import terminal_elicitation
    from minimcp.types import ElicitRequestFormParams

    schema = json.loads(sys.argv[1])
    result = terminal_elicitation(None, ElicitRequestFormParams(message="Book a table", requested_schema=schema))
    print("RESULT " + result.model_dump_json(exclude_none=True, by_alias=True))
""")

PTY_SCHEMA = obj({
    "party": {"type": "integer", "title": "Party size", "minimum": 1},
    "terrace": {"type": "boolean", "title": "Terrace"},
    "day": {"type": "string", "title": "Day", "format": "date", "default": "2025-12-26"},
}, ["party", "terrace"])


def run_on_pty(steps: list[tuple[str, str]]) -> tuple[dict[str, Any], str]:
    """Wait for each prompt text, type the answer; return the child's printed result and the screen."""
    term = Terminal([sys.executable, "-c", PTY_SCRIPT, json.dumps(PTY_SCHEMA)])
    try:
        for prompt, keys in steps:
            term.expect(prompt)
            term.type(keys)
        term.expect("}\r\n")
        assert term.proc.wait(20) == 0
        line = next(x for x in term.screen.splitlines() if x.startswith("RESULT "))
        return json.loads(line[len("RESULT "):]), term.screen
    finally:
        term.close()


def test_form_on_a_real_terminal() -> None:
    result, screen = run_on_pty([
        ("Party size (required)", "zero\r"),
        ("expected a whole number", "3\r"),
        ("Terrace (required)", "y\r"),
        ("Day (optional)", "\r"),
        ("Send?", "e\r"),
        ("Party size (required)", "\r"),  # Enter keeps the earlier answer, 3
        ("Terrace (required)", "n\r"),
        ("Day (optional)", "2025-12-27\r"),
        ("Send?", "\r"),
    ])
    assert result == {"action": "accept", "content": {"party": 3, "terrace": False, "day": "2025-12-27"}}
    assert "Book a table" in screen and "zero" in screen  # the terminal echoed what was typed


def test_ctrl_c_on_a_real_terminal_cancels() -> None:
    """Ctrl-C at a prompt cancels the question, and the program goes on to print the result.

    A SIGINT that lands after the prompt is printed but before the read starts is only noticed
    when the read returns (a CPython limitation); like a user, the test presses Ctrl-C again.
    """
    term = Terminal([sys.executable, "-c", PTY_SCRIPT, json.dumps(PTY_SCHEMA)])
    try:
        term.expect("Party size (required)")
        term.type("2\r")
        term.expect("[y/n] > ")
        for _ in range(10):
            term.type("\x03")
            try:
                term.expect("(cancelled)", timeout=2.0)
                break
            except AssertionError:
                continue
        term.expect("}\r\n")
        assert term.proc.wait(20) == 0
        assert 'RESULT {"action":"cancel"}' in term.screen
    finally:
        term.close()


# --- through the real client ---------------------------------------------------------------------------
@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize(("tool", "arguments", "lines", "expected"), [
    ("book_table", {"date": "2025-12-25", "party_size": 2}, ["y", "2025-12-27", ""],
     "Booked a table for 2 on 2025-12-27."),
    ("book_table", {"date": "2025-12-25", "party_size": 2}, ["maybe", "yes", "", ""],
     "Booked a table for 2 on 2025-12-26."),
    ("book_table", {"date": "2025-12-25", "party_size": 2}, [":decline"], "No booking made."),
    ("pay_deposit", {"booking_id": "42"}, ["y"], "Complete the payment in your browser."),
    ("pay_deposit", {"booking_id": "42"}, [], "No deposit taken. The booking expires in one hour."),
])
def test_as_the_clients_callback(mode: str, tool: str, arguments: dict[str, Any], lines: list[str],
                                 expected: str) -> None:
    screen = io.StringIO()
    ask = TerminalElicitation(input=io.StringIO("".join(line + "\n" for line in lines)), output=screen)
    server = load_example("bistro_server" if tool == "book_table" else "deposit_server").mcp
    with Client(server, mode=mode, elicitation_callback=ask) as client:
        result = client.call_tool(tool, arguments)
    assert not result.is_error, result
    assert result.content[0].text == expected
    assert screen.getvalue().startswith("Question from server Bistro:\n")


def test_concurrent_questions_take_turns() -> None:
    """Two threads asking at once: each question is asked whole, one after the other."""
    screen = io.StringIO()
    ask = TerminalElicitation(input=io.StringIO("Ada\n36\n\nBob\n41\n\n"), output=screen)
    results: list[ElicitResult] = []
    threads = [threading.Thread(target=lambda: results.append(
        ask(None, ElicitRequestFormParams(message="Who?", requested_schema=SCHEMA)))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted((r.content["name"], r.content["age"]) for r in results if r.content) == [("Ada", 36), ("Bob", 41)]
    assert screen.getvalue().count("Who?\n") == 2
