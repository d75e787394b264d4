"""The verbs that talk to a server as a client: inspect, call, read and prompt.

Each opens one connection (``Connection.client``), does its one thing, and returns the exit code;
what goes wrong on the way raises and is turned into a message and exit code 2 by ``app.main``.
"""

from __future__ import annotations

import io
import sys
import time
from argparse import Namespace
from collections.abc import Callable
from contextlib import ExitStack
from typing import IO, Any, TypeVar

from minimcp.cli.arguments import read_json_object, split_pairs, typed_arguments
from minimcp.cli.errors import TOOL_ERROR, CLIError
from minimcp.cli.output import (
    CELL,
    CUT,
    MESSAGE,
    SideChannel,
    content_text,
    cut,
    first_line,
    print_answer,
    print_json,
    table,
    tool_rows,
    wire,
)
from minimcp.cli.target import Connection
from minimcp.client.client import Client
from minimcp.client.printable import printable
from minimcp.client.tasks import DEFAULT_WAIT, TaskCancelledError, TaskHandle
from minimcp.client.terminal import TerminalElicitation
from minimcp.types import CallToolResult, PaginatedResult, Prompt, Resource, ResourceTemplate, Tool

T = TypeVar("T")

#: No server has this many pages of anything; a cursor that never ends stops here.
MAX_PAGES = 1000
#: How often a task's status is looked at, in seconds, when the server suggests no interval.
STATUS_EVERY = 1.0


def pages(fetch: Callable[[str | None], PaginatedResult], items: Callable[[Any], list[T]]) -> list[T]:
    """Every item of a paginated list, following ``nextCursor`` (bounded by ``MAX_PAGES``)."""
    found: list[T] = []
    cursor: str | None = None
    for _ in range(MAX_PAGES):
        page = fetch(cursor)
        found.extend(items(page))
        cursor = page.next_cursor
        if not cursor:
            return found
    raise CLIError(f"the server's list did not end after {MAX_PAGES} pages; its nextCursor keeps going")


def all_tools(client: Client) -> list[Tool]:
    return pages(lambda cursor: client.list_tools(cursor=cursor), lambda page: page.tools)


# --- inspect ---------------------------------------------------------------------------------------------
def inspect(connection: Connection, options: Namespace, out: IO[str]) -> int:
    with ExitStack() as stack:
        client = connection.client(stack)
        if client.server_info is None:
            client.session.era.describe_server(client.session)
        caps = client.server_capabilities
        tools = all_tools(client) if caps is None or caps.tools is not None else []
        resources: list[Resource] = []
        templates: list[ResourceTemplate] = []
        if caps is None or caps.resources is not None:
            resources = pages(lambda c: client.list_resources(cursor=c), lambda page: page.resources)
            templates = pages(lambda c: client.list_resource_templates(cursor=c), lambda page: page.resource_templates)
        prompts: list[Prompt] = []
        if caps is None or caps.prompts is not None:
            prompts = pages(lambda c: client.list_prompts(cursor=c), lambda page: page.prompts)
        info = client.server_info
        if options.json:
            print_json({
                "serverInfo": wire(info) if info else None,
                "protocolVersion": client.protocol_version,
                "instructions": client.instructions,
                "capabilities": wire(caps) if caps else {},
                "tools": [wire(t) for t in tools],
                "resources": [wire(r) for r in resources],
                "resourceTemplates": [wire(t) for t in templates],
                "prompts": [wire(p) for p in prompts],
            }, out)
            return 0
        name = (info.title or info.name) if info else "(unnamed server)"
        version = f" {info.version}" if info and info.version else ""
        out.write(cut(printable(f"{name}{version}  (protocol {client.protocol_version})"), CELL) + "\n")
        if client.instructions:
            out.write(cut(printable(f"Instructions: {client.instructions.strip()}", lines=True), MESSAGE) + "\n")
        named = sorted(key for key, value in (wire(caps) if caps else {}).items() if value is not None)
        out.write(cut(printable(f"Capabilities: {', '.join(named) or 'none'}"), MESSAGE) + "\n")
        cut_short = False
        for title, rows, headers in (
            ("Tools", tool_rows(tools), ("NAME", "ARGUMENTS", "RETURNS", "DESCRIPTION")),
            ("Resources", [[r.uri, r.name, r.mime_type or "", first_line(r.description)] for r in resources],
             ("URI", "NAME", "MIME TYPE", "DESCRIPTION")),
            ("Resource templates", [[t.uri_template, t.name, t.mime_type or "", first_line(t.description)]
                                    for t in templates], ("URI TEMPLATE", "NAME", "MIME TYPE", "DESCRIPTION")),
            ("Prompts", [[p.name, ", ".join(a.name + ("" if a.required else "?") for a in p.arguments or []),
                          first_line(p.description)] for p in prompts], ("NAME", "ARGUMENTS", "DESCRIPTION")),
        ):
            out.write(f"\n{title} ({len(rows)})\n")
            if rows:
                shown = table(rows, headers)
                cut_short = cut_short or CUT in shown
                out.write(shown + "\n")
        if cut_short:
            out.write(f"\n{CUT}N) marks a text or a list cut short, N more left out; --json shows everything\n")
    return 0


# --- call --------------------------------------------------------------------------------------------------
def call(connection: Connection, options: Namespace, out: IO[str]) -> int:
    words = list(options.arguments)
    given: dict[str, Any] = {}
    from_stdin = "-" in words or options.json == "-"
    if "-" in words and options.json == "-":
        raise CLIError("stdin holds one JSON object of arguments: give either - or --json -, not both")
    if "-" in words:
        words.remove("-")
        given.update(read_json_object("-", sys.stdin, "stdin"))
    if options.json:
        given.update(read_json_object(options.json, sys.stdin, "--json"))
    pairs = split_pairs(words)
    side = SideChannel()
    with ExitStack() as stack:
        client = connection.client(stack, elicitation=_terminal_form(stack, from_stdin), logging=side.log)
        tools = {tool.name: tool for tool in all_tools(client)}
        tool = tools.get(options.tool)
        arguments = {**given, **typed_arguments(pairs, tool.input_schema if tool is not None else None)}
        try:
            if options.task and tool is not None:
                result = _as_task(client, tool.name, arguments, options.timeout, side)
            else:
                # A tool not listed to this caller is asked for all the same: the server's refusal
                # says why (the permission it needs, signing in), which "no such tool" would not.
                result = client.call_tool(options.tool, arguments, options.timeout, side.progress)
        finally:
            side.done()
    if tool is None and result.is_error and content_text(result) == [f"Unknown tool: {options.tool}"]:
        raise CLIError(f"the server has no tool {options.tool!r}; it has: {', '.join(sorted(tools)) or 'none'} "
                       "(the inspect verb lists them with their arguments)")
    return show_result(result, options.json is not None, options.full, out)


def show_result(result: CallToolResult, as_json: bool, full: bool, out: IO[str]) -> int:
    """Print a tool's answer (an error's on stderr) and give the exit code it earns."""
    stream = sys.stderr if result.is_error else out
    if as_json:
        print_json(result.structured_content if result.structured_content is not None else wire(result), stream)
    else:
        texts = content_text(result)
        if not texts and result.structured_content is not None:
            print_json(result.structured_content, stream)
        print_answer([text + "\n" for text in texts], stream, full)
    return TOOL_ERROR if result.is_error else 0


def _terminal_form(stack: ExitStack, stdin_taken: bool) -> TerminalElicitation:
    """The form asks on stderr and reads stdin, or the terminal itself when stdin carried the
    arguments; without either, a question reads end-of-file and is cancelled."""
    source = sys.stdin
    if stdin_taken:
        try:
            source = stack.enter_context(open("/dev/tty"))  # noqa: SIM115 (closed with the stack)
        except OSError:
            source = io.StringIO()  # no terminal to ask on: at its end at once
    return TerminalElicitation(input=source, output=sys.stderr, open_browser=True)


def _as_task(client: Client, name: str, arguments: dict[str, Any], timeout: float | None,
             side: SideChannel) -> CallToolResult:
    """Run the call as a task and wait for it (bounded), saying each change of its status."""
    handle: TaskHandle = client.call_tool(name, arguments, timeout, side.progress, task=True)
    if handle.task_id is None:
        side.say("task: the server answered at once, without a task")
        return handle.result()
    ttl = handle.created.ttl_ms if handle.created else None
    wait = timeout or (ttl / 1000 if ttl else DEFAULT_WAIT)
    deadline = time.monotonic() + wait
    shown = ""
    while True:
        state = handle.status()
        status = state.status + (f" ({state.status_message})" if state.status_message else "")
        if status != shown:
            side.say(f"task {handle.task_id}: {status}")
            shown = status
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise CLIError(f"task {handle.task_id} did not end within {wait:g} s; it keeps running on the server")
        try:
            result = handle.result(timeout=min(STATUS_EVERY, remaining))
        except TimeoutError:
            continue
        except TaskCancelledError as cancelled:
            raise CLIError(str(cancelled), TOOL_ERROR) from None
        if not shown.startswith("completed"):
            side.say(f"task {handle.task_id}: completed")
        return result


# --- read and prompt ---------------------------------------------------------------------------------------
def read(connection: Connection, options: Namespace, out: IO[str]) -> int:
    with ExitStack() as stack:
        result = connection.client(stack, elicitation=_terminal_form(stack, False)).read_resource(options.uri)
    if options.json:
        print_json(wire(result), out)
    else:
        print_answer([text + ("" if text.endswith("\n") else "\n") for text in content_text(result)], out,
                     options.full)
    return 0


def prompt(connection: Connection, options: Namespace, out: IO[str]) -> int:
    arguments = dict(split_pairs(options.arguments))  # prompt arguments are strings on the wire
    with ExitStack() as stack:
        client = connection.client(stack, elicitation=_terminal_form(stack, False))
        result = client.get_prompt(options.name, arguments or None)
    if options.json:
        print_json(wire(result), out)
    else:
        print_answer([text + "\n" for text in content_text(result)], out, options.full)
    return 0
