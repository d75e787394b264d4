"""What the command line prints: tables for people, JSON for programs, and the side channel on stderr.

stdout carries only the answer (a tool's text, a resource, a table, or JSON with ``--json``), so
``minimcp call ... | jq`` works; progress, log messages, task status and questions go to stderr.

Every text here comes from the server, which chose it: it reaches the terminal through
``printable`` (no escape sequence of the server's is obeyed; JSON keeps them, escaped), and what a
person reads is bounded: table cells, enums, an answer and a log line are cut, saying how much
more there is and how to see all of it.
"""

from __future__ import annotations

import base64
import json
import sys
import threading
from collections.abc import Sequence
from typing import IO, Any

from pydantic import BaseModel

from minimcp.client.printable import printable, printable_json
from minimcp.types import (
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    LoggingMessageNotificationParams,
    ReadResourceResult,
    ResourceLink,
    TextContent,
    TextResourceContents,
    Tool,
)

#: Width of the progress bar, in characters.
BAR = 30
#: A table cell's most characters, and an argument's type's within its cell.
CELL = 100
TYPE = 40
#: What ``call``, ``read`` and ``prompt`` print of an answer, in characters, unless ``--full``.
ANSWER = 100_000
#: A log line's or an error message's most characters.
MESSAGE = 4000
#: How a cut text ends: the mark, then how much more there was.
CUT = "…(+"


def wire(model: BaseModel) -> Any:
    """A model as the protocol spells it (camelCase, no empty fields), ready for ``json.dumps``."""
    return model.model_dump(by_alias=True, exclude_none=True, mode="json")


def print_json(value: Any, out: IO[str]) -> None:
    """The whole value, however long: JSON is for programs, and ``--json`` is how to see everything."""
    out.write(printable_json(value) + "\n")


def cut(text: str, most: int) -> str:
    """``text`` if it has at most ``most`` characters, else its start and how many more there were."""
    return text if len(text) <= most else f"{text[:most]}{CUT}{len(text) - most:,} characters)"


def table(rows: Sequence[Sequence[str]], headers: Sequence[str]) -> str:
    """Columns padded to their widest cell, the last running free; each cell one printable line of
    at most ``CELL`` characters."""
    shown = [[cut(printable(str(cell)), CELL) for cell in row] for row in [headers, *rows]]
    widths = [max(len(row[i]) for row in shown) for i in range(len(headers) - 1)]
    lines = []
    for row in shown:
        cells = [cell.ljust(width) for cell, width in zip(row, widths)] + [row[-1]]
        lines.append("  " + "  ".join(cells).rstrip())
    return "\n".join(lines)


def first_line(text: str | None) -> str:
    return (text or "").strip().splitlines()[0] if (text or "").strip() else ""


def schema_summary(schema: dict[str, Any] | None) -> str:
    """``date: string, party_size: integer, note?: string`` from an object schema."""
    if not schema:
        return ""
    required = set(schema.get("required") or [])
    parts = []
    for name, prop in (schema.get("properties") or {}).items():
        parts.append(f"{name}{'' if name in required else '?'}: {type_name(prop)}")
    return ", ".join(parts)


def type_name(prop: Any) -> str:
    if not isinstance(prop, dict):
        return "any"
    if isinstance(prop.get("enum"), list):
        return _enum(prop["enum"])
    return cut(_type_name(prop), TYPE)


def _type_name(prop: dict[str, Any]) -> str:
    kind = prop.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        return f"{type_name(prop.get('items'))}[]"
    if kind:
        return str(kind)
    options = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(options, list):
        return "|".join(type_name(option) for option in options)
    return "object" if "$ref" in prop else "any"


def _enum(values: list[Any]) -> str:
    """The first values that fit in ``TYPE`` characters, then how many more (a model's choices may be
    hundreds of thousands)."""
    shown: list[str] = []
    width = 0
    for value in values:
        text = cut(json.dumps(value, ensure_ascii=False), TYPE)
        if shown and width + len(text) + 1 > TYPE:
            break
        shown.append(text)
        width += len(text) + 1
    rest = len(values) - len(shown)
    return "|".join(shown) + (f"|{CUT}{rest:,} more)" if rest else "")


def returns(schema: dict[str, Any] | None) -> str:
    """A tool's output schema in a few characters: a wrapped value's type, or an object's field names."""
    if not schema:
        return ""
    properties = schema.get("properties") or {}
    if schema.get("x-fastmcp-wrap-result") or list(properties) == ["result"] and "result" in (schema.get("required") or []):
        return type_name(properties["result"])
    return "{" + ", ".join(properties) + "}"


def tool_rows(tools: Sequence[Tool]) -> list[list[str]]:
    return [[tool.name, schema_summary(tool.input_schema), returns(tool.output_schema), first_line(tool.description)]
            for tool in tools]


def content_text(result: CallToolResult | GetPromptResult | ReadResourceResult) -> list[str]:
    """Each piece of content as a person reads it: text as it is, anything else named."""
    if isinstance(result, ReadResourceResult):
        return [item.text if isinstance(item, TextResourceContents) else _binary(item.mime_type, item.blob, item.uri)
                for item in result.contents]
    if isinstance(result, GetPromptResult):
        return [f"[{message.role}] {_block(message.content)}" for message in result.messages]
    return [_block(block) for block in result.content]


def print_answer(texts: Sequence[str], out: IO[str], full: bool) -> None:
    """The texts of an answer, one after the other, printable (newlines and tabs kept). Past
    ``ANSWER`` characters the rest is left out unless ``full``, and stderr says how much, and how
    to see it all."""
    shown = printable("".join(texts), lines=True)
    if full or len(shown) <= ANSWER:
        out.write(shown)
        return
    out.write(shown[:ANSWER] + "\n")
    out.flush()
    sys.stderr.write(
        f"minimcp: the answer is cut after {ANSWER:,} characters, {len(shown) - ANSWER:,} more not shown: "
        "--full prints all of it, --json the whole result as JSON\n")


def _block(block: Any) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ResourceLink):
        return f"[resource link] {block.uri}" + (f" ({block.name})" if block.name else "")
    if isinstance(block, EmbeddedResource):
        item = block.resource
        return item.text if isinstance(item, TextResourceContents) else _binary(item.mime_type, item.blob, item.uri)
    return _binary(getattr(block, "mime_type", None), getattr(block, "data", ""), None)


def _binary(mime_type: str | None, data: str, uri: str | None) -> str:
    size = len(base64.b64decode(data, validate=False)) if data else 0
    where = f" {uri}" if uri else ""
    return f"[{mime_type or 'binary'}{where}, {size} bytes; --json shows it base64-encoded]"


class SideChannel:
    """Progress bars and log messages on stderr; one lock keeps a log line from splitting a bar."""

    def __init__(self, err: IO[str] | None = None) -> None:
        self.err = err if err is not None else sys.stderr
        self._lock = threading.Lock()
        self._bar_open = False

    @property
    def _tty(self) -> bool:
        isatty = getattr(self.err, "isatty", None)
        return bool(isatty and isatty())

    def say(self, text: str) -> None:
        """A line of the server's (a log message, a task's status), printable and at most ``MESSAGE`` long."""
        with self._lock:
            self._end_bar()
            self.err.write(cut(printable(text, lines=True), MESSAGE) + "\n")
            self.err.flush()

    def progress(self, progress: float, total: float | None, message: str | None) -> None:
        """One ``notifications/progress``: a bar redrawn in place on a terminal, a line otherwise."""
        if total:
            done = max(0.0, min(1.0, progress / total))
            text = f"[{'#' * round(done * BAR):<{BAR}}] {done:4.0%} {progress:g}/{total:g}"
        else:
            text = f"[progress {progress:g}]"
        if message:
            text += " " + cut(printable(message), CELL)
        with self._lock:
            if self._tty:
                self.err.write("\r\x1b[2K" + text)
                self._bar_open = True
            else:
                self.err.write(text + "\n")
            self.err.flush()

    def log(self, params: LoggingMessageNotificationParams) -> None:
        data = params.data if isinstance(params.data, str) else json.dumps(params.data, ensure_ascii=False)
        self.say(f"[{params.level}]" + (f" {params.logger}:" if params.logger else "") + f" {data}")

    def done(self) -> None:
        with self._lock:
            self._end_bar()

    def _end_bar(self) -> None:
        if self._bar_open:
            self.err.write("\n")
            self._bar_open = False
