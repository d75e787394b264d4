"""The ``minimcp`` console script, run as a user runs it: a subprocess against a server file (in
memory), a command over stdio and a server over real HTTP on a port it announced, in both eras.

Every run starts a new session, so the program has no controlling terminal to fall back on: what
it reads comes from the stdin the test gives it (or the pty of the elicitation test).
"""

from __future__ import annotations

import json
import os
import queue
import shlex
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import EXAMPLES, LEGACY, MODERN, ROOT, next_line, docs_source, refusing_port, server_process
from terminal_support import Terminal

MINIMCP = str(Path(sys.executable).with_name("minimcp"))
#: The Python the console script runs on (its #! line): what install writes as a file server's command.
PYTHON = Path(MINIMCP).read_text().splitlines()[0].removeprefix("#!")
SERVER = ROOT / "tests" / "servers" / "cli_server.py"
BISTRO = EXAMPLES / "bistro_server.py"
#: Each era as ``--era`` names it, and the version the connection must end on.
ERAS = pytest.mark.parametrize(("era", "version"), [("legacy", LEGACY), ("auto", MODERN)])
VERBS = ("run", "inspect", "call", "read", "prompt", "dev", "install")


def minimcp(*args: str, stdin: str = "", env: dict[str, str] | None = None,
            cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MINIMCP, *args], input=stdin, capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})}, cwd=cwd, start_new_session=True)


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """cli_server.py served by ``minimcp run --http`` on the port it bound and announced."""
    with server_process([MINIMCP, "run", str(SERVER), "--http", "--port", "0"]) as served:
        yield f"{served.base}/mcp"


Argv = Callable[..., list[str]]


@pytest.fixture(params=["file", "stdio", "http"])
def argv(request: pytest.FixtureRequest) -> Argv:
    """``argv(verb, *rest)``: the words that point ``verb`` at cli_server.py on each transport."""
    if request.param == "http":
        url = request.getfixturevalue("http_url")
        return lambda verb, *rest: [verb, url, *rest]
    if request.param == "stdio":
        return lambda verb, *rest: [verb, *rest, "--", sys.executable, str(SERVER)]
    return lambda verb, *rest: [verb, str(SERVER), *rest]


# --- help ---------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("verb", VERBS)
def test_every_verb_has_help_with_an_example(verb: str) -> None:
    done = minimcp(verb, "--help")
    assert done.returncode == 0, done.stderr
    examples = done.stdout.split("examples:", 1)[1]
    assert f"minimcp {verb} " in examples
    assert "TARGET" in done.stdout


def test_python_dash_m_is_the_same_command() -> None:
    done = subprocess.run([sys.executable, "-m", "minimcp", "inspect", str(SERVER), "--json"], capture_output=True,
                          text=True, timeout=120, start_new_session=True)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["serverInfo"]["name"] == "Almanac"


# --- inspect ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("era", "version"), [("legacy", LEGACY), ("auto", MODERN), (MODERN, MODERN)])
def test_inspect_json_shows_everything_the_server_offers(argv: Argv, era: str, version: str) -> None:
    done = minimcp(*argv("inspect", "--json", "--era", era))
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["serverInfo"]["name"] == "Almanac"
    assert shown["protocolVersion"] == version
    assert shown["instructions"] == "Tides and notes for the harbour."
    assert {"tools", "resources", "prompts"} <= shown["capabilities"].keys()
    tools = {tool["name"]: tool for tool in shown["tools"]}
    assert set(tools) == {"echo", "add", "fail", "count_to", "survey"}
    assert tools["add"]["inputSchema"]["properties"] == {"a": {"title": "A", "type": "integer"},
                                                          "b": {"title": "B", "type": "integer"}}
    assert tools["echo"]["outputSchema"]["properties"]["tags"]["type"] == "array"
    assert [r["uri"] for r in shown["resources"]] == ["notes://today"]
    assert [t["uriTemplate"] for t in shown["resourceTemplates"]] == ["notes://{day}"]
    assert [(p["name"], [a["name"] for a in p["arguments"]]) for p in shown["prompts"]] == [("summarize", ["topic"])]


def test_inspect_prints_readable_tables() -> None:
    done = minimcp("inspect", str(SERVER))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"Almanac  (protocol {MODERN})"
    assert "Capabilities: extensions, prompts, resources, tools" in lines
    tools = lines.index("Tools (5)")
    assert lines[tools + 1].split() == ["NAME", "ARGUMENTS", "RETURNS", "DESCRIPTION"]
    add = next(line for line in lines if line.startswith("  add "))
    assert [cell.strip() for cell in add.split("  ") if cell] == ["add", "a: integer, b: integer", "integer",
                                                                  "Add two whole numbers."]
    assert "  echo  " in done.stdout and "note?: string" in done.stdout
    assert "Resource templates (1)" in lines and any(line.startswith("  notes://{day}  note") for line in lines)
    assert "Prompts (1)" in lines and any(line.split()[:2] == ["summarize", "topic"] for line in lines)


# --- call ---------------------------------------------------------------------------------------------------
@ERAS
def test_call_types_key_value_words_by_the_input_schema(argv: Argv, era: str, version: str) -> None:
    done = minimcp(*argv("call", "--era", era, "echo", "count=3", "ratio=2.5", "loud=yes", 'tags=["a", "b"]',
                         'options={"x": 1}', "--json"))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"count": 3, "ratio": 2.5, "loud": True, "tags": ["a", "b"],
                                       "options": {"x": 1}, "note": ""}


@ERAS
def test_call_prints_the_text_and_shows_progress_and_logs_on_stderr(argv: Argv, era: str, version: str) -> None:
    done = minimcp(*argv("call", "--era", era, "count_to", "n=3"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "counted to 3\n"
    err = done.stderr.splitlines()
    bars = [line for line in err if line.startswith("[#")]
    assert bars == [f"[{'#' * 10:<30}]  33% 1/3 step 1", f"[{'#' * 20:<30}]  67% 2/3 step 2",
                    f"[{'#' * 30}] 100% 3/3 step 3"]
    assert [line for line in err if line.startswith("[info]")] == [f"[info] counted {i}" for i in (1, 2, 3)]


@ERAS
def test_call_as_a_task_shows_its_status_and_waits(argv: Argv, era: str, version: str) -> None:
    done = minimcp(*argv("call", "--era", era, "survey", "area=north", "--task"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "surveyed north\n"
    statuses = [line.split(": ", 1)[1] for line in done.stderr.splitlines() if line.startswith("task ")]
    assert statuses[0] == "working" and statuses[-1] == "completed"


@ERAS
def test_a_tool_error_exits_1_with_its_message_on_stderr(argv: Argv, era: str, version: str) -> None:
    done = minimcp(*argv("call", "--era", era, "fail", "reason=closed"))
    assert done.returncode == 1
    assert done.stdout == ""
    assert "Error executing tool fail: refused: closed" in done.stderr


def test_arguments_from_stdin_and_as_json() -> None:
    assert minimcp("call", str(SERVER), "add", "-", stdin='{"a": 1, "b": 2}').stdout == "3\n"
    given = minimcp("call", str(SERVER), "add", "--json", '{"a": 1, "b": 2}', "b=5")  # a word overrides its key
    assert json.loads(given.stdout) == {"result": 6}  # JSON in, JSON out: the structured content
    piped = minimcp("call", str(SERVER), "add", "--json", "-", stdin='{"a": 4, "b": 4}')
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout) == {"result": 8}


@pytest.mark.parametrize(("words", "says"), [
    (["add", "a=two", "b=1"], "a='two': the tool expects integer"),
    (["add", "a"], "'a' is not key=value"),
    (["nope"], "the server has no tool 'nope'; it has: add, count_to, echo, fail, survey"),
    (["add", "--json", "[1]"], "must hold a JSON object, not list"),
])
def test_a_call_that_cannot_be_made_exits_2_saying_why(words: list[str], says: str) -> None:
    done = minimcp("call", str(SERVER), *words)
    assert done.returncode == 2
    assert done.stdout == ""
    assert says in done.stderr


@ERAS
def test_a_protocol_error_exits_2_with_the_servers_message(argv: Argv, era: str, version: str) -> None:
    done = minimcp(*argv("read", "--era", era, "files://missing"))
    assert done.returncode == 2
    last = done.stderr.splitlines()[-1]  # after what the server itself logged
    assert last.startswith("minimcp: ") and "MCP error -32602: Unknown resource: files://missing" in last


def test_a_server_that_cannot_be_reached_exits_2() -> None:
    with refusing_port() as port:
        done = minimcp("call", f"http://127.0.0.1:{port}/mcp", "add", "a=1", "b=2")
    assert done.returncode == 2
    assert done.stderr.startswith(f"minimcp: http://127.0.0.1:{port}/mcp: ")


@pytest.mark.parametrize(("words", "says"), [
    (["inspect", "no_such_server.py"], "no_such_server.py: no such file; give a server file"),
    (["inspect", f"{SERVER}:nothing"], "has no 'nothing'"),
    (["inspect", f"{SERVER}:Echo"], "is a ModelMetaclass, not an MCP server"),
    (["inspect", "--", "no-such-command-anywhere"], "is the command after -- installed"),
    (["run", "http://127.0.0.1:1/mcp"], "run serves a server file"),
    (["inspect", str(SERVER), "--token", "t0k"], "--header and --token are sent to a URL"),
])
def test_a_target_that_is_not_a_server_says_what_to_give(words: list[str], says: str) -> None:
    done = minimcp(*words)
    assert done.returncode == 2
    assert says in done.stderr


def test_a_file_is_found_by_the_names_mcp_run_tries(tmp_path: Path) -> None:
    (tmp_path / "helpers.py").write_text("NAME = 'Lighthouse'\n")
    (tmp_path / "keeper.py").write_text(textwrap.dedent("""\
        from helpers import NAME
        from minimcp.server import MCPServer

        mcp = "not a server"
        app = MCPServer(NAME)
        spare = MCPServer("Spare")
    """))
    assert json.loads(minimcp("inspect", "--json", str(tmp_path / "keeper.py")).stdout)["serverInfo"]["name"] \
        == "Lighthouse"
    named = minimcp("inspect", "--json", f"{tmp_path / 'keeper.py'}:spare")
    assert json.loads(named.stdout)["serverInfo"]["name"] == "Spare"
    (tmp_path / "empty.py").write_text("x = 1\n")
    missing = minimcp("inspect", str(tmp_path / "empty.py"))
    assert missing.returncode == 2 and "name it mcp, server or app at module level" in missing.stderr


@pytest.mark.parametrize(("source", "says"), [
    ("from minimcp.server import MCPServer\nimport settings_of_another_machine\nmcp = MCPServer('x')\n",
     "ModuleNotFoundError: No module named 'settings_of_another_machine' (line 2: import settings_of_another_machine)"),
    ("import json\n\ndef config():\n    return json.loads('{')\n\nCONFIG = config()\n",
     "JSONDecodeError: Expecting property name enclosed in double quotes: line 1 column 2 (char 1) "
     "(line 4: return json.loads('{'))"),
    ("def broken(:\n    pass\n", "SyntaxError: invalid syntax (line 1)"),
    ("import sys\nsys.exit('set API_KEY first')\n", "it called sys.exit('set API_KEY first') (line 2: sys.exit('set API_KEY first'))"),
], ids=["import", "raises", "syntax", "exits"])
@pytest.mark.parametrize("verb", ["inspect", "run"])
def test_a_server_file_that_fails_to_import_exits_2_naming_the_file_and_the_line(
        tmp_path: Path, verb: str, source: str, says: str) -> None:
    (tmp_path / "server.py").write_text(source)
    done = minimcp(verb, str(tmp_path / "server.py"))
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == f"minimcp: {tmp_path / 'server.py'} failed while being imported: {says}"


# --- read and prompt ----------------------------------------------------------------------------------------
@ERAS
def test_read_and_prompt(argv: Argv, era: str, version: str) -> None:
    assert minimcp(*argv("read", "--era", era, "notes://today")).stdout == "High tide at 06:12.\n"
    assert minimcp(*argv("read", "--era", era, "notes://monday")).stdout == "Note for monday.\n"
    read = json.loads(minimcp(*argv("read", "--era", era, "notes://today", "--json")).stdout)
    assert read["contents"] == [{"uri": "notes://today", "mimeType": "text/plain", "text": "High tide at 06:12."}]
    prompt = minimcp(*argv("prompt", "--era", era, "summarize", "topic=tides"))
    assert prompt.returncode == 0, prompt.stderr
    assert prompt.stdout == "[user] Summarize what is known about tides.\n"


# --- elicitation ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("era", ["legacy", "auto"])
def test_the_form_is_answered_on_a_real_terminal(era: str) -> None:
    term = Terminal([MINIMCP, "call", "--era", era, str(BISTRO), "book_table", "date=2025-12-25", "party_size=2"])
    try:
        term.expect("Question from server ", timeout=60)
        term.expect("Bistro")  # in bold: stderr is a terminal
        term.expect("Accept Alternative (required)")
        term.type("y\r")
        term.expect("Date (optional)")
        term.type("2025-12-27\r")
        term.expect("Send?")
        term.type("\r")
        term.expect("Booked a table for 2 on 2025-12-27.")
        assert term.proc.wait(30) == 0
    finally:
        term.close()


def test_piped_answers_and_a_url_question_that_opens_the_browser(tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser"
    browser.write_text(f"#!{sys.executable}\nimport sys\nopen({str(opened)!r}, 'w').write(sys.argv[1])\n")
    browser.chmod(0o755)
    done = minimcp("call", str(EXAMPLES / "deposit_server.py"), "pay_deposit", "booking_id=42", stdin="y\n",
                   env={"BROWSER": str(browser)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Complete the payment in your browser.\n"
    assert "https://pay.example.com/deposit/42" in done.stderr
    assert opened.read_text() == "https://pay.example.com/deposit/42"
    declined = minimcp("call", str(BISTRO), "book_table", "date=2025-12-25", "party_size=2", stdin=":decline\n")
    assert declined.stdout == "No booking made.\n"
    assert "(declined)" in declined.stderr


def test_with_the_arguments_on_stdin_and_no_terminal_a_question_is_cancelled() -> None:
    done = minimcp("call", str(BISTRO), "book_table", "-", stdin='{"date": "2025-12-25", "party_size": 2}')
    assert done.returncode == 0, done.stderr
    assert done.stdout == "No booking made.\n"
    assert "(cancelled)" in done.stderr


# --- install ------------------------------------------------------------------------------------------------
HOST_FILES = {
    "claude-desktop": (".config/Claude/claude_desktop_config.json", "mcpServers", False),
    "claude-code": (".claude.json", "mcpServers", True),
    "cursor": (".cursor/mcp.json", "mcpServers", False),
    "vscode": (".config/Code/User/mcp.json", "servers", True),
    "gemini": (".gemini/settings.json", "mcpServers", False),
}


def home_env(home: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("XDG_CONFIG_HOME", "APPDATA")}
    return {**env, "HOME": str(home)}


def install(home: Path, *words: str) -> subprocess.CompletedProcess[str]:
    done = subprocess.run([MINIMCP, "install", *words], capture_output=True, text=True, timeout=120,
                          env=home_env(home), start_new_session=True)
    return done


@pytest.mark.parametrize("host", list(HOST_FILES))
def test_install_writes_the_hosts_file_keeping_what_is_there(tmp_path: Path, host: str) -> None:
    relative, key, typed = HOST_FILES[host]
    config = tmp_path / relative
    config.parent.mkdir(parents=True, exist_ok=True)
    other = {"command": "other-server", "args": []}
    config.write_text(json.dumps({"theme": "dark", key: {"other": other}}))

    done = install(tmp_path, host, str(BISTRO), "--env", "TABLES=12")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("added Bistro in ") and str(config) in done.stdout
    written = json.loads(config.read_text())
    assert written["theme"] == "dark" and written[key]["other"] == other
    entry = written[key]["Bistro"]
    assert entry == {**({"type": "stdio"} if typed else {}), "command": PYTHON,
                     "args": ["-m", "minimcp", "run", str(BISTRO)], "env": {"TABLES": "12"}}

    before = config.read_bytes()
    again = install(tmp_path, host, str(BISTRO), "--env", "TABLES=12")
    assert again.returncode == 0, again.stderr
    assert "nothing changed" in again.stdout
    assert config.read_bytes() == before

    # what the host will run starts the server: the same command, over stdio
    shown = minimcp("inspect", "--json", "--", entry["command"], *entry["args"], env=entry["env"])
    assert shown.returncode == 0, shown.stderr
    assert json.loads(shown.stdout)["serverInfo"]["name"] == "Bistro"


def test_install_keeps_earlier_environment_variables_and_takes_a_name(tmp_path: Path) -> None:
    assert install(tmp_path, "cursor", str(BISTRO), "--name", "bistro", "--env", "A=1").returncode == 0
    assert install(tmp_path, "cursor", str(BISTRO), "--name", "bistro", "--env", "B=2").returncode == 0
    assert install(tmp_path, "cursor", str(BISTRO), "--name", "bistro").returncode == 0
    servers = json.loads((tmp_path / ".cursor/mcp.json").read_text())["mcpServers"]
    assert list(servers) == ["bistro"] and servers["bistro"]["env"] == {"A": "1", "B": "2"}


def test_install_print_shows_the_entry_and_writes_nothing(tmp_path: Path) -> None:
    done = install(tmp_path, "claude-desktop", str(BISTRO), "--print")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"mcpServers": {"Bistro": {
        "command": PYTHON, "args": ["-m", "minimcp", "run", str(BISTRO)]}}}
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("host", "entry"), [
    ("claude-code", {"type": "http", "url": "https://notes.example.com/mcp", "headers": {"Authorization": "Bearer t0k"}}),
    ("cursor", {"url": "https://notes.example.com/mcp", "headers": {"Authorization": "Bearer t0k"}}),
    ("vscode", {"type": "http", "url": "https://notes.example.com/mcp", "headers": {"Authorization": "Bearer t0k"}}),
    ("gemini", {"httpUrl": "https://notes.example.com/mcp", "headers": {"Authorization": "Bearer t0k"}}),
])
def test_install_a_url(tmp_path: Path, host: str, entry: dict[str, object]) -> None:
    done = install(tmp_path, host, "https://notes.example.com/mcp", "--token", "t0k", "--name", "notes")
    assert done.returncode == 0, done.stderr
    relative, key, _ = HOST_FILES[host]
    assert json.loads((tmp_path / relative).read_text())[key] == {"notes": entry}


def test_install_refuses_what_a_host_cannot_hold(tmp_path: Path) -> None:
    desktop = install(tmp_path, "claude-desktop", "https://notes.example.com/mcp")
    assert desktop.returncode == 2 and "Settings > Connectors" in desktop.stderr
    env = install(tmp_path, "cursor", "https://notes.example.com/mcp", "--env", "A=1")
    assert env.returncode == 2 and "give it --header or --token instead" in env.stderr
    (tmp_path / ".cursor").mkdir()
    (tmp_path / ".cursor/mcp.json").write_text("{ // a comment\n}")
    broken = install(tmp_path, "cursor", str(BISTRO))
    assert broken.returncode == 2 and "is not JSON" in broken.stderr and "nothing was written" in broken.stderr
    assert (tmp_path / ".cursor/mcp.json").read_text() == "{ // a comment\n}"


def test_install_a_command(tmp_path: Path) -> None:
    done = install(tmp_path, "gemini", "--name", "almanac", "--", "python3", str(SERVER))
    assert done.returncode == 0, done.stderr
    entry = json.loads((tmp_path / ".gemini/settings.json").read_text())["mcpServers"]["almanac"]
    assert Path(entry["command"]).is_absolute() and Path(entry["command"]).name == "python3"
    assert entry["args"] == [str(SERVER)]


# --- dev ----------------------------------------------------------------------------------------------------
def line_with(lines: queue.Queue[str], text: str) -> str:
    return next_line(lines, lambda line: text in line, 60.0, f"line with {text!r}")[0]


def test_dev_without_node_says_how_to_get_it_serves_and_reloads(tmp_path: Path) -> None:
    server = tmp_path / "harbour.py"
    server.write_text(SERVER.read_text())
    empty = tmp_path / "bin"
    empty.mkdir()
    env = {**os.environ, "PATH": str(empty)}
    with server_process([MINIMCP, "dev", str(server), "--port", "0"], env=env) as dev:
        url = f"{dev.base}/mcp"
        assert "install Node.js" in line_with(dev.lines, "npx was not found")
        assert minimcp("call", url, "add", "a=2", "b=3").stdout == "5\n"

        server.write_text(SERVER.read_text().replace("return a + b", "return a * b"))
        stamp = server.stat().st_mtime_ns + 1_000_000_000
        os.utime(server, ns=(stamp, stamp))  # a later time even on a coarse clock
        assert url in line_with(dev.lines, "reloaded harbour.py")
        assert minimcp("call", url, "add", "a=2", "b=3").stdout == "6\n"

        server.write_text("this is not python\n")
        os.utime(server, ns=(stamp + 1_000_000_000,) * 2)
        line_with(dev.lines, "save a fix to reload it")
        server.write_text(SERVER.read_text())
        os.utime(server, ns=(stamp + 2_000_000_000,) * 2)
        line_with(dev.lines, "reloaded harbour.py")
        assert minimcp("call", url, "add", "a=2", "b=3").stdout == "5\n"


def test_dev_starts_the_inspector_pointed_at_the_server(tmp_path: Path) -> None:
    record = tmp_path / "npx-run.json"
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    npx = bin_dir / "npx"  # stands in for Node's npx: records how it was started, as the Inspector would run
    npx.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, sys, time
        config = json.load(open(sys.argv[sys.argv.index("--config") + 1]))
        json.dump({{"argv": sys.argv[1:], "config": config}}, open({str(record)!r} + ".tmp", "w"))
        __import__("os").replace({str(record)!r} + ".tmp", {str(record)!r})
        time.sleep(120)
    """))
    npx.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    with server_process([MINIMCP, "dev", str(SERVER), "--port", "0"], env=env) as dev:
        line_with(dev.lines, "starting the MCP Inspector")
        deadline = time.monotonic() + 60
        while not record.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        started = json.loads(record.read_text())
    assert started["argv"] == ["@modelcontextprotocol/inspector", "--config", started["argv"][2],
                               "--server", "minimcp-dev"]
    assert started["config"] == {"mcpServers": {"minimcp-dev": {"type": "streamable-http", "url": f"{dev.base}/mcp"}}}


# --- the command-line guide ------------------------------------------------------------------------------
#: What each line of the command-line guide's block (docs/how-to/command-line.md) prints (a part of its stdout); the answers
#: typed at the one that asks (accept the other date, keep its default, send).
GUIDE_PRINTS = {
    "minimcp inspect examples/bistro_server.py": "  book_table  date: string, party_size: integer  string",
    "minimcp call examples/bistro_server.py book_table date=2025-12-24 party_size=2":
        "Booked a table for 2 on 2025-12-24.\n",
    "minimcp call examples/bistro_server.py book_table date=2025-12-25 party_size=2":
        "Booked a table for 2 on 2025-12-26.\n",
    """minimcp call examples/bistro_server.py book_table --json '{"date": "2025-12-24", "party_size": 2}'""":
        '"result": "Booked a table for 2 on 2025-12-24."',
    "minimcp inspect --era legacy -- minimcp run examples/bistro_server.py": f"Bistro  (protocol {LEGACY})",
    "minimcp run examples/bistro_server.py --http --port 0": '"name": "Bistro"',
    "minimcp install claude-desktop examples/bistro_server.py --print":
        f'"args": [\n        "-m",\n        "minimcp",\n        "run",\n        "{BISTRO}"',
}
GUIDE_ANSWERS = {"minimcp call examples/bistro_server.py book_table date=2025-12-25 party_size=2": "y\n\n\n"}


def test_the_guides_command_line_runs_as_printed(tmp_path: Path) -> None:
    lines = [line for line in docs_source("how_to/command_line.sh").splitlines() if line.strip()]
    assert lines == list(GUIDE_PRINTS)
    env = {"HOME": str(tmp_path), "PATH": f"{Path(MINIMCP).parent}{os.pathsep}{os.environ['PATH']}"}
    for line in lines:
        words = shlex.split(line)
        if words[1] == "run":  # a server: ask it who it is
            with server_process([MINIMCP, *words[1:]], cwd=ROOT) as served:
                done = minimcp("inspect", "--json", f"{served.base}/mcp")
        else:
            done = minimcp(*words[1:], stdin=GUIDE_ANSWERS.get(line, ""), env=env, cwd=ROOT)
        assert done.returncode == 0, (line, done.stderr)
        assert GUIDE_PRINTS[line] in done.stdout, (line, done.stdout)
    assert list(tmp_path.iterdir()) == []  # --print wrote nothing


# --- OAuth ----------------------------------------------------------------------------------------------
GUARDED = """
from minimcp.server.auth.provider import AccessToken
from minimcp.server.auth.settings import AuthSettings
from minimcp.server.mcpserver import MCPServer


class Tokens:
    def verify_token(self, token):
        return AccessToken(token=token, client_id="cli", scopes=["mcp:tools"]) if token == "reader" else None


mcp = MCPServer("Guarded", token_verifier=Tokens(), auth=AuthSettings(
    issuer_url="https://idp.test", resource_server_url="http://127.0.0.1/mcp", required_scopes=["mcp:tools"]))


@mcp.tool()
def look() -> str:
    return "looked"


@mcp.tool(required_scopes=["mcp:admin"])
def wipe() -> str:
    return "wiped"
"""


def test_a_refused_token_says_which_flag_to_change(tmp_path: Path) -> None:
    (tmp_path / "guarded.py").write_text(GUARDED)
    with server_process([MINIMCP, "run", str(tmp_path / "guarded.py"), "--http", "--port", "0"]) as served:
        url = f"{served.base}/mcp"
        allowed = minimcp("call", url, "look", "--token", "reader")
        short = minimcp("call", url, "wipe", "--token", "reader")
    assert (allowed.returncode, allowed.stdout) == (0, "looked\n")
    assert short.returncode == 2
    assert short.stderr == (f"minimcp: {url}: the server refused the call (HTTP 403: insufficient_scope, Required "
                            "scope: mcp:admin): the token lacks a permission the call needs (it asks for scope "
                            "'mcp:tools mcp:admin'); use a token that carries it, or leave --token out to sign in again\n")
def test_a_server_that_asks_for_oauth_gets_a_browser_sign_in() -> None:
    browser = ROOT / "tests" / "servers" / "sign_in_browser.py"  # signs in as demo / demo, as a user would
    with server_process([sys.executable, str(ROOT / "tests" / "servers" / "oauth_example.py")]) as served:
        url = f"{served.base}/mcp"
        done = minimcp("call", url, "whoami", "--json", env={"BROWSER": str(browser)})
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["user"] == "demo"
        refused = minimcp("call", url, "whoami", "--token", "not-a-token")
    assert refused.returncode == 2
    assert refused.stderr == (f"minimcp: {url}: the server refused the credentials (HTTP 401: invalid_token, "
                              "Invalid or expired token); check --token or --header, or leave them out to sign in "
                              "through the browser\n")
