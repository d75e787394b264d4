"""Reading an OpenAPI document: JSON or YAML from a dict, a file or a URL, its ``$ref`` resolved,
and the base URL its operations live under.

Every walk here is bounded, since a small document can describe a huge one: a YAML alias names a
node again (nine aliases of nine aliases, nine levels deep, is 800 bytes and 387 million nodes),
and a ``$ref`` does the same across the document (a schema whose two properties refer to the next
schema, forty times, inlines to 2^40 nodes). Aliases are measured before the document is built,
references counted as they are inlined, and a document past either bound is refused with a message
saying which part and why.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin

import requests

from minimcp.jsonrpc import MAX_JSON_DEPTH
from minimcp.server.app.openapi.exchange import Base, Exchange, ExchangeError

#: The most nodes YAML aliases may repeat across a document (a shared block of responses used by a
#: few hundred operations is tens of thousands); an alias bomb repeats millions.
MAX_ALIAS_NODES = 100_000
#: The most nodes one tool's inlined schema may hold (about 150 KB of JSON, already more than a
#: model reads well); references that fan out pass it long before they finish expanding.
MAX_SCHEMA_NODES = 10_000
#: The deepest an inlined schema may nest: what is left of ``MAX_JSON_DEPTH`` once a tools/list
#: answer has wrapped it (result, tools, the tool, inputSchema, properties, an anyOf for null...).
MAX_SCHEMA_DEPTH = MAX_JSON_DEPTH - 16
#: The largest spec read from a URL.
MAX_SPEC_BYTES = 64 * 1024 * 1024

_VARIABLE = re.compile(r"\{([^{}]*)\}")


def load_spec(spec: Mapping[str, Any] | str | Path, session: requests.Session,
              timeout: float) -> tuple[dict[str, Any], str | None]:
    """The spec as a dict, and the URL it came from (for a relative ``servers`` entry)."""
    if isinstance(spec, Mapping):
        return dict(spec), None
    text = str(spec)
    if re.match(r"https?://", text):
        try:
            answer = Exchange(Base.parse(text, whole_origin=True), session, None, timeout, MAX_SPEC_BYTES).send("get", text)
        except (ValueError, ExchangeError) as failed:
            raise ValueError(f"Could not read the OpenAPI spec at {text}: {failed}") from None
        if answer.status >= 400:
            raise ValueError(f"Could not read the OpenAPI spec at {text}: it answered {answer.status} {answer.reason}")
        return _document(answer.text, f"The OpenAPI spec at {text}"), text
    try:
        written = Path(text).read_text(encoding="utf-8")
    except OSError as failed:
        raise ValueError(f"Could not read the OpenAPI spec {text!r} (a JSON or YAML file, a URL or a dict): "
                         f"{failed}") from None
    return _document(written, f"The OpenAPI spec {text!r}"), None


def _document(text: str, where: str) -> dict[str, Any]:
    """A spec's text as a dict: JSON, else YAML (the form most specs are written in), which needs PyYAML."""
    try:
        document = json.loads(text)
    except RecursionError:
        raise ValueError(f"{where} nests too deeply to read") from None
    except ValueError as not_json:
        document = _yaml(text, where, not_json)
    if not isinstance(document, dict):
        raise ValueError(f"{where} is not an OpenAPI document: it holds {type(document).__name__}, not an object")
    return document


def _yaml(text: str, where: str, not_json: ValueError) -> Any:
    try:
        import yaml
    except ImportError:
        raise ValueError(f"{where} is not JSON ({not_json}); if it is YAML, install PyYAML to read it "
                         "(pip install 'minimcp-sync[openapi]')") from None

    class Loader(yaml.SafeLoader):
        """YAML's safe loader, keeping dates as the strings JSON Schema means them to be
        (``format: date`` values, examples): a ``datetime`` in an input schema could not be sent."""

    Loader.yaml_implicit_resolvers = {
        first: [(tag, pattern) for tag, pattern in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
    loader = Loader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        repeated = _repeated_nodes(node, where)
        if repeated > MAX_ALIAS_NODES:
            raise ValueError(f"{where} is refused: its YAML aliases repeat {repeated:,} nodes, more than the "
                             f"{MAX_ALIAS_NODES:,} a document may (an alias bomb?)")
        return loader.construct_document(node)
    except yaml.YAMLError as failed:
        raise ValueError(f"Could not read {where[0].lower()}{where[1:]}: it is neither JSON ({not_json}) "
                         f"nor YAML ({failed})") from None
    except RecursionError:
        raise ValueError(f"{where} nests too deeply to read") from None
    finally:
        loader.dispose()


def _children(node: Any) -> Iterator[Any]:
    """A YAML node's children: a scalar's value is its text, a sequence's a list of nodes, a
    mapping's a list of (key, value) node pairs."""
    if isinstance(node.value, list):
        for item in node.value:
            yield from item if isinstance(item, tuple) else (item,)


def _repeated_nodes(root: Any, where: str) -> int:
    """How many nodes YAML aliases add to the graph under ``root`` once each is replaced by the node
    it names, counted without expanding: each node's expanded size once, capped just past the bound
    (only whether it passes matters, and a bomb's sizes would be numbers of thousands of digits).
    An alias inside the node it names is refused."""
    seen, reach = {id(root)}, [root]
    while reach:
        fresh = [child for child in _children(reach.pop()) if id(child) not in seen]
        seen.update(id(child) for child in fresh)
        reach.extend(fresh)
    cap = len(seen) + MAX_ALIAS_NODES + 1
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()  # entered and not finished: a child among them closes a cycle
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, finished = stack.pop()
        if finished:
            sizes[id(node)] = min(cap, 1 + sum(sizes[id(child)] for child in _children(node)))
            open_nodes.discard(id(node))
        elif id(node) in open_nodes:
            raise ValueError(f"{where} is refused: the YAML node on line {node.start_mark.line + 1} holds an "
                             "alias of itself, a cycle no JSON document has")
        elif id(node) not in sizes:
            open_nodes.add(id(node))
            stack.append((node, True))
            stack.extend((child, False) for child in _children(node))
    return sizes[id(root)] - len(sizes)


class SchemaTooLarge(ValueError):
    """A schema that inlines past ``MAX_SCHEMA_NODES`` or ``MAX_SCHEMA_DEPTH``; the message says which."""


class Refs:
    """``$ref`` within the document. ``inline`` replaces each by what it names (a reference back into
    itself becomes ``{}``: any value), within ``MAX_SCHEMA_NODES`` and ``MAX_SCHEMA_DEPTH``."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        self.document = document

    def resolve(self, node: Any) -> Any:
        """``node``, or what its chain of references ends at."""
        chain: list[str] = []
        while isinstance(node, Mapping) and "$ref" in node:
            chain.append(str(node["$ref"]))
            if chain[-1] in chain[:-1]:
                raise ValueError(f"The OpenAPI spec's references go round in a circle: {' -> '.join(chain)}")
            node = self._target(chain[-1])
        return node

    def inline(self, node: Any) -> Any:
        """``node`` with its references inlined, or ``SchemaTooLarge``."""
        left = MAX_SCHEMA_NODES

        def walk(node: Any, seen: frozenset[str], depth: int) -> Any:
            nonlocal left
            left -= 1
            if left < 0:
                raise SchemaTooLarge(f"more than {MAX_SCHEMA_NODES:,} nodes")
            if depth > MAX_SCHEMA_DEPTH:
                raise SchemaTooLarge(f"deeper than {MAX_SCHEMA_DEPTH} levels")
            if isinstance(node, Mapping):
                if "$ref" in node:
                    ref = str(node["$ref"])
                    return {} if ref in seen else walk(self._target(ref), seen | {ref}, depth)
                return {key: walk(value, seen, depth + 1) for key, value in node.items()}
            if isinstance(node, list):
                return [walk(value, seen, depth + 1) for value in node]
            return node

        return walk(node, frozenset(), 0)

    def _target(self, ref: str) -> Any:
        if not ref.startswith("#/"):
            raise ValueError(f"from_openapi resolves references within the document only, not {ref!r}")
        node: Any = self.document
        for part in ref[2:].split("/"):
            part = unquote(part).replace("~1", "/").replace("~0", "~")
            if not isinstance(node, Mapping) or part not in node:
                raise ValueError(f"The OpenAPI spec refers to {ref!r}, which it does not contain")
            node = node[part]
        return node


def server_url(document: Mapping[str, Any], given: str | None, source: str | None,
               variables: Mapping[str, str] | None, optional: bool = False) -> str | None:
    """Where the operations live: ``given``, else the spec's first server (relative to where the spec
    was read), its variables filled from ``variables`` or the spec's defaults, never from a call."""
    if given:
        if variables:
            raise ValueError("server_variables= fills in the spec's server URL, which base_url= replaces: give one")
        return given
    servers = document.get("servers") or []
    server = servers[0] if servers and isinstance(servers[0], Mapping) else {}
    url = server.get("url")
    unused = sorted(set(variables or {}) - set(_VARIABLE.findall(str(url or ""))))
    if unused:
        raise ValueError(f"server_variables names {unused}, which the spec's server URL {url!r} does not use")
    if url:
        url = _fill_variables(str(url), server.get("variables") or {}, variables or {})
    if url and source:
        return urljoin(source, url)
    if url and re.match(r"https?://", url):
        return url
    if optional:
        return None
    raise ValueError("The spec names no absolute server URL: give from_openapi(..., base_url='https://api.example.com')")


def _fill_variables(url: str, declared: Mapping[str, Any], given: Mapping[str, str]) -> str:
    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        spec = declared.get(name)
        if not isinstance(spec, Mapping):
            raise ValueError(f"The spec's server URL {url!r} uses {{{name}}}, which its variables do not declare")
        allowed = spec.get("enum")
        if name in given:
            if allowed and given[name] not in allowed:
                raise ValueError(f"server_variables[{name!r}] is {given[name]!r}; the spec allows {allowed}")
            return str(given[name])
        if "default" not in spec:
            raise ValueError(f"The spec's server variable {name!r} has no default: give from_openapi(..., "
                             f"server_variables={{{name!r}: ...}})")
        return str(spec["default"])

    return _VARIABLE.sub(value, url)
