"""OpenAPI tools against a hostile caller, spec or API: where requests go, what they carry, and how
long and how large an exchange may be.

The API is a real WSGI app on a loopback port that records every request reaching it; a second
one listens elsewhere (another port, ``127.0.0.2``) to catch anything that leaks there. The
operator's session carries every kind of credential: a bearer token, an API key header, an API key
in the query and a cookie.
"""

from __future__ import annotations

import contextlib
import gzip
import json
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
import yaml

from conftest import refusing_port
from minimcp import Client
from minimcp.httpd import WSGIServer
from minimcp.server import MCPServer
from minimcp.server.openapi import MAX_ANSWER_BYTES, MAX_REDIRECTS

Answer = tuple[str, list[tuple[str, str]], Any]


class Recorder:
    """A WSGI API that records each request reaching it (path, query, credentials) and answers with
    what ``routes`` says for its path, else 200 and the record as JSON."""

    def __init__(self, routes: dict[str, Callable[[dict[str, Any]], Answer]] | None = None) -> None:
        self.routes = routes or {}
        self.base = ""
        self._lock = threading.Lock()  # guards seen
        self.seen: list[dict[str, Any]] = []

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Any:
        length = int(environ.get("CONTENT_LENGTH") or 0)
        record = {"method": environ["REQUEST_METHOD"], "path": environ["PATH_INFO"],
                  "query": environ.get("QUERY_STRING", ""), "authorization": environ.get("HTTP_AUTHORIZATION"),
                  "api_key": environ.get("HTTP_X_API_KEY"), "cookie": environ.get("HTTP_COOKIE"),
                  "request_id": environ.get("HTTP_X_REQUEST_ID"),
                  "body": environ["wsgi.input"].read(length).decode() if length else ""}
        with self._lock:
            self.seen.append(record)
        route = self.routes.get(record["path"])
        status, headers, body = route(record) if route else ("200 OK", [("Content-Type", "application/json")],
                                                            [json.dumps(record).encode()])
        start_response(status, headers)
        return body

    def paths(self) -> list[str]:
        with self._lock:
            return [record["path"] for record in self.seen]


@pytest.fixture
def listen() -> Iterator[Callable[..., Recorder]]:
    """``listen(recorder, host="127.0.0.1", port=0)``: serve it there until the test ends."""
    with contextlib.ExitStack() as stack:
        def start(recorder: Recorder, host: str = "127.0.0.1", port: int = 0) -> Recorder:
            server = WSGIServer(recorder, host, port)
            thread = threading.Thread(target=server.serve_forever, name=f"api-{host}", daemon=True)
            thread.start()
            stack.callback(thread.join, 5)
            stack.callback(server.shutdown, 5)
            recorder.base = f"http://{host}:{server.port}"
            return recorder

        yield start


def operator() -> requests.Session:
    """The operator's session, with a credential of every kind."""
    session = requests.Session()
    session.headers.update({"Authorization": "Bearer op-token", "X-Api-Key": "op-key"})
    session.params = {"api_key": "op-query-key"}
    session.cookies.set("api_session", "op-cookie")
    return session


def spec(paths: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "info": {"title": "Shop"}, "paths": paths, **extra}


def get(operation_id: str, *parameters: dict[str, Any]) -> dict[str, Any]:
    return {"get": {"operationId": operation_id, "parameters": list(parameters), "responses": {"200": {}}}}


def param(name: str, where: str, kind: str = "string") -> dict[str, Any]:
    return {"name": name, "in": where, "required": where == "path", "schema": {"type": kind}}


def text(result: Any) -> str:
    return str(result.content[0].text)


def redirect(status: str, location: str) -> Callable[[dict[str, Any]], Answer]:
    return lambda record: (status, [("Location", location), ("Content-Length", "0")], [b""])


def test_a_dot_segment_or_empty_path_value_is_refused_and_nothing_is_sent(listen: Callable[..., Recorder]) -> None:
    api = listen(Recorder())
    document = spec({"/users/{username}/orders": get("listOrders", param("username", "path"))})
    with Client(MCPServer.from_openapi(document, base_url=f"{api.base}/api/v1", session=operator())) as client:
        for value in ("..", ".", "%2e%2e", "%2E", ".%2e", ""):
            refused = client.call_tool("listOrders", {"username": value})
            assert refused.is_error, value
            assert f"The path parameter 'username' may not be {value!r}: as a path segment it would move" in text(
                refused)
        assert api.seen == []
        for value in ("ann", "...", "a/../.."):  # the last one a single segment, its slashes encoded
            answered = client.call_tool("listOrders", {"username": value})
            assert json.loads(text(answered))["path"] == f"/api/v1/users/{value}/orders"
    assert all(record["authorization"] == "Bearer op-token" for record in api.seen)


def test_redirects_are_followed_only_on_the_apis_origin_and_under_its_path(listen: Callable[..., Recorder]) -> None:
    elsewhere = listen(Recorder(), "127.0.0.2")
    other_port = listen(Recorder())
    api = listen(Recorder())
    api.routes.update({
        "/api/v1/away": redirect("302 Found", f"{elsewhere.base}/steal"),
        "/api/v1/port": redirect("307 Temporary Redirect", f"{other_port.base}/api/v1/steal"),
        "/api/v1/scheme": redirect("302 Found", f"https://{api.base[len('http://'):]}/api/v1/steal"),
        "/api/v1/outside": redirect("302 Found", "/admin"),
        "/api/v1/climb": redirect("302 Found", "/api/v1/%2e%2e/admin"),
        "/api/v1/moved": lambda record: ("301 Moved Permanently", [("Location", "/api/v1/here?page=2"),
                                                                   ("Set-Cookie", "api_state=s1; Path=/")], [b""]),
        "/api/v1/form": redirect("303 See Other", "done"),
        "/api/v1/keep": redirect("307 Temporary Redirect", f"{api.base}/api/v1/kept"),
        "/api/v1/loop": redirect("302 Found", "/api/v1/loop"),
    })
    post = {"post": {"operationId": "post", "requestBody": {"content": {"application/json": {"schema": {
        "type": "object", "properties": {"name": {"type": "string"}}}}}}, "responses": {"200": {}}}}
    document = spec({"/away": get("away"), "/port": get("port"), "/scheme": get("scheme"),
                     "/outside": get("outside"), "/climb": get("climb"), "/moved": get("moved"),
                     "/loop": get("loop"), "/form": post, "/keep": {"post": {**post["post"], "operationId": "keep"}}})
    with Client(MCPServer.from_openapi(document, base_url=f"{api.base}/api/v1", session=operator())) as client:
        for name, target in (("away", f"{elsewhere.base}/steal"), ("port", f"{other_port.base}/api/v1/steal"),
                             ("scheme", f"https://{api.base[len('http://'):]}/api/v1/steal"),
                             ("outside", f"{api.base}/admin"), ("climb", f"{api.base}/api/v1/%2e%2e/admin")):
            refused = client.call_tool(name, {})
            assert refused.is_error
            assert (f"GET {api.base}/api/v1/{name} answered 30" in text(refused)
                    and f"a redirect to {target}, which is not followed: it leaves {api.base}/api/v1" in text(refused))

        moved = json.loads(text(client.call_tool("moved", {})))
        assert moved["path"] == "/api/v1/here" and "page=2" in moved["query"]
        assert "api_state=s1" in moved["cookie"]  # the API's own cookie, kept by the session
        done = json.loads(text(client.call_tool("post", {"name": "Kit"})))
        assert (done["method"], done["path"], done["body"]) == ("GET", "/api/v1/done", "")
        kept = json.loads(text(client.call_tool("keep", {"name": "Kit"})))
        assert (kept["method"], kept["path"], json.loads(kept["body"])) == ("POST", "/api/v1/kept", {"name": "Kit"})
        looped = client.call_tool("loop", {})
        assert looped.is_error and f"more than {MAX_REDIRECTS} redirects are not followed" in text(looped)
    assert elsewhere.seen == [] and other_port.seen == []
    assert "/admin" not in api.paths() and api.paths().count("/api/v1/loop") == MAX_REDIRECTS + 1
    for record in api.seen:  # every request the API got carried the operator's credentials
        assert (record["authorization"], record["api_key"]) == ("Bearer op-token", "op-key")
        assert "api_session=op-cookie" in record["cookie"]
        assert "api_key=op-query-key" in record["query"]


def test_no_credential_shows_in_a_result(listen: Callable[..., Recorder]) -> None:
    api = listen(Recorder({"/api/v1/away": redirect("302 Found", "http://127.0.0.2:1/x?key=1"),
                           "/api/v1/gone": lambda record: ("404 Not Found", [("Content-Type", "text/plain")],
                                                           [b"no such thing"])}))
    document = spec({"/away": get("away"), "/gone": get("gone")})
    signed = api.base.replace("http://", "http://op:base-secret@") + "/api/v1"
    results = []
    with Client(MCPServer.from_openapi(document, base_url=signed, session=operator())) as client:
        results += [text(client.call_tool(name, {})) for name in ("away", "gone")]
    with refusing_port() as port, Client(MCPServer.from_openapi(
            document, base_url=f"http://127.0.0.1:{port}/api/v1", session=operator())) as client:
        results.append(text(client.call_tool("gone", {})))
    assert results[0].startswith(f"Error executing tool away: GET {api.base}/api/v1/away answered 302 Found, "
                                 f"a redirect to http://127.0.0.2:1/x, which is not followed: it leaves {api.base}")
    assert results[1] == f"Error executing tool gone: GET {api.base}/api/v1/gone answered 404 Not Found: no such thing"
    assert results[2].startswith(f"Error executing tool gone: GET http://127.0.0.1:{port}/api/v1/gone failed: ")
    assert "Connection refused" in results[2]
    assert not [said for said in results if "secret" in said or "op-query-key" in said or "key=1" in said]
    assert {record["authorization"] for record in api.seen} == {"Basic b3A6YmFzZS1zZWNyZXQ="}  # op:base-secret


def test_the_spec_itself_is_fetched_only_from_its_origin(listen: Callable[..., Recorder]) -> None:
    elsewhere = listen(Recorder(), "127.0.0.2")
    document = json.dumps(spec({"/a": get("a")}, servers=[{"url": "/api/v1"}])).encode()
    api = listen(Recorder({
        "/openapi.json": redirect("302 Found", "/specs/openapi.json?v=2"),
        "/specs/openapi.json": lambda record: ("200 OK", [("Content-Type", "application/json")], [document]),
        "/moved.json": redirect("301 Moved Permanently", f"{elsewhere.base}/openapi.json"),
    }))
    with Client(MCPServer.from_openapi(f"{api.base}/openapi.json?v=2", session=operator())) as client:
        assert json.loads(text(client.call_tool("a", {})))["path"] == "/api/v1/a"
    with pytest.raises(ValueError, match="^" + re.escape(
            f"Could not read the OpenAPI spec at {api.base}/moved.json: GET {api.base}/moved.json answered 301 "
            f"Moved Permanently, a redirect to {elsewhere.base}/openapi.json, which is not followed")):
        MCPServer.from_openapi(f"{api.base}/moved.json", session=operator())
    assert elsewhere.seen == []
    assert [record["query"] for record in api.seen[:2]] == ["v=2&api_key=op-query-key", "v=2&api_key=op-query-key"]


def test_a_spec_path_that_names_a_host_or_leaves_the_base_path_is_refused(listen: Callable[..., Recorder]) -> None:
    api = listen(Recorder())
    elsewhere = listen(Recorder(), "127.0.0.2")
    authority = elsewhere.base[len("http://"):]
    for path in (f"@{authority}/collect", "collect", f"{authority}/collect", "/a?api_key=x", "/a#x", "/../admin",
                 "/a/%2e%2e/admin", "/a\\b", "/a b", "/a\r\nHost: x"):
        with pytest.raises(ValueError, match="^" + re.escape(f"The OpenAPI spec's path {path!r} is refused")):
            MCPServer.from_openapi(spec({path: get("collect")}), base_url=f"{api.base}/api/v1", session=operator())
    for base in (api.base, f"{api.base}/api/v1"):  # a path that looks like an authority stays a path
        document = spec({f"//{authority}/collect": get("collect")})
        with Client(MCPServer.from_openapi(document, base_url=base, session=operator())) as client:
            assert not client.call_tool("collect", {}).is_error
    assert elsewhere.seen == []
    assert api.paths() == [f"//{authority}/collect", f"/api/v1//{authority}/collect"]


def test_server_variables_come_from_the_spec_or_the_operator_never_from_a_call(
        listen: Callable[..., Recorder]) -> None:
    api = listen(Recorder())
    port = int(api.base.rsplit(":", 1)[1])
    elsewhere = listen(Recorder(), "127.0.0.2", port)  # the same port, on the host a caller would pick
    servers = [{"url": f"http://{{region}}:{port}/v1",
                "variables": {"region": {"default": "127.0.0.1", "enum": ["127.0.0.1", "127.0.0.2"]}}}]
    document = spec({"/regions/{region}/items": get("items", param("region", "path"))},
                    servers=servers)
    with Client(MCPServer.from_openapi(document, session=operator())) as client:
        answered = json.loads(text(client.call_tool("items", {"region": "127.0.0.2"})))
    assert answered["path"] == "/v1/regions/127.0.0.2/items" and elsewhere.seen == []

    with Client(MCPServer.from_openapi(document, session=operator(),
                                       server_variables={"region": "127.0.0.2"})) as client:
        assert not client.call_tool("items", {"region": "eu"}).is_error
    assert [record["path"] for record in elsewhere.seen] == ["/v1/regions/eu/items"]  # the operator's choice
    with pytest.raises(ValueError, match=r"^server_variables\['region'\] is 'evil.example'; the spec allows"):
        MCPServer.from_openapi(document, server_variables={"region": "evil.example"})
    with pytest.raises(ValueError, match=r"^server_variables names \['zone'\], which the spec's server URL"):
        MCPServer.from_openapi(document, server_variables={"zone": "a"})
    with pytest.raises(ValueError, match="^server_variables= fills in the spec's server URL, which base_url= replaces"):
        MCPServer.from_openapi(document, base_url=api.base, server_variables={"region": "127.0.0.2"})
    undeclared = spec({"/a": get("a")}, servers=[{"url": f"http://{{host}}:{port}/v1"}])
    with pytest.raises(ValueError, match="uses {host}, which its variables do not declare"):
        MCPServer.from_openapi(undeclared)


def test_cookie_and_header_values_cannot_add_cookies_or_headers(listen: Callable[..., Recorder]) -> None:
    api = listen(Recorder())
    document = spec({"/prefs": get("prefs", param("lang", "cookie"), param("X-Request-Id", "header"),
                                   param("Authorization", "header"), param("Host", "header"))})
    mcp = MCPServer.from_openapi(document, base_url=f"{api.base}/api/v1", session=operator())
    with Client(mcp) as client:
        schema = client.list_tools().tools[0].input_schema
        assert set(schema["properties"]) == {"lang", "X-Request-Id"}  # the exchange owns Authorization and Host
        for value in ("en; role=admin; api_session=x", "en,fr", "en us", "\"en\"", "en\\", "en\x00"):
            refused = client.call_tool("prefs", {"lang": value})
            assert refused.is_error and "The cookie parameter 'lang' may not hold" in text(refused)
        for value in ("r1\r\nX-Api-Key: stolen", "r1\nX: y", " r1", "r\x7f"):
            refused = client.call_tool("prefs", {"X-Request-Id": value})
            assert refused.is_error and "The header parameter 'X-Request-Id' takes one line" in text(refused)
        assert api.seen == []
        sent = json.loads(text(client.call_tool("prefs", {"lang": "en-GB", "X-Request-Id": "r-1 é"})))
    for where in ("cookie", "header"):
        with pytest.raises(ValueError, match=f"^GET /prefs: its {where} parameter 'lang; role' is not a name HTTP"):
            MCPServer.from_openapi(spec({"/prefs": get("prefs", param("lang; role", where))}), base_url=api.base)
    assert sorted(sent["cookie"].split("; ")) == ["api_session=op-cookie", "lang=en-GB"]
    assert sent["request_id"] == "r-1 é" and sent["authorization"] == "Bearer op-token"


def drip(record: dict[str, Any]) -> Answer:
    def body() -> Iterator[bytes]:
        for _ in range(20):
            yield b"x"
            time.sleep(0.25)

    return "200 OK", [("Content-Type", "text/plain"), ("Content-Length", "20")], body()


def test_the_timeout_is_a_deadline_for_the_whole_exchange(listen: Callable[..., Recorder]) -> None:
    api = listen(Recorder({
        "/api/v1/drip": drip,
        "/api/v1/slow-redirect": lambda record: ("302 Found", [("Location", "/api/v1/ok")], drip(record)[2]),
    }))
    document = spec({"/drip": get("drip"), "/ok": get("ok"), "/slow-redirect": get("slowRedirect")})
    with Client(MCPServer.from_openapi(document, base_url=f"{api.base}/api/v1", timeout=2)) as client:
        late = client.call_tool("drip", {})  # each byte well within 2 s, all of them not
        assert late.is_error and text(late).endswith(
            f"GET {api.base}/api/v1/drip did not finish within 2 s, the timeout for the whole exchange "
            "(from_openapi(..., timeout=...))")
        followed = client.call_tool("slowRedirect", {})  # its body is not read: the redirect says it all
        assert json.loads(text(followed))["path"] == "/api/v1/ok"
    with Client(MCPServer.from_openapi(document, base_url=f"{api.base}/api/v1", timeout=60)) as client:
        assert text(client.call_tool("drip", {})) == "x" * 20


def test_an_answer_past_max_answer_bytes_is_refused_and_the_limit_can_be_raised(
        listen: Callable[..., Recorder]) -> None:
    big = b"y" * (MAX_ANSWER_BYTES + 1)
    zipped = gzip.compress(b"0" * (MAX_ANSWER_BYTES * 4))
    api = listen(Recorder({
        "/api/v1/big": lambda record: ("200 OK", [("Content-Type", "text/plain")],
                                       (big[i:i + 65536] for i in range(0, len(big), 65536))),
        "/api/v1/zipped": lambda record: ("200 OK", [("Content-Type", "text/plain"), ("Content-Encoding", "gzip"),
                                                     ("Content-Length", str(len(zipped)))], [zipped]),
    }))
    document = spec({"/big": get("big"), "/zipped": get("zipped"), "/ok": get("ok")})
    with Client(MCPServer.from_openapi(document, base_url=f"{api.base}/api/v1")) as client:
        for name in ("big", "zipped"):  # the limit counts what the answer decompresses to
            refused = client.call_tool(name, {})
            assert refused.is_error and text(refused).endswith(
                f"GET {api.base}/api/v1/{name} answered more than {MAX_ANSWER_BYTES:,} bytes, the most read; "
                "from_openapi(..., max_answer_bytes=...) raises it")
        assert json.loads(text(client.call_tool("ok", {})))["path"] == "/api/v1/ok"  # still serving
    raised = MCPServer.from_openapi(document, base_url=f"{api.base}/api/v1", max_answer_bytes=MAX_ANSWER_BYTES + 1)
    with Client(raised) as client:
        assert text(client.call_tool("big", {})) == big.decode()


def load_in_a_process(path: Path) -> str:
    """What ``from_openapi`` says of the spec at ``path``, in a process of its own: a spec that
    expands without bound fails the test by its timeout instead of hanging it."""
    program = ("import sys\nfrom minimcp.server import MCPServer\n"
               "try:\n    MCPServer.from_openapi(sys.argv[1], base_url='http://127.0.0.1:1')\n"
               "except ValueError as failure:\n    print(failure)\nelse:\n    print('loaded')\n")
    done = subprocess.run([sys.executable, "-c", program, str(path)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def posting(schema: str, operation_id: str) -> dict[str, Any]:
    return {"post": {"operationId": operation_id, "responses": {"200": {}}, "requestBody": {"content": {
        "application/json": {"schema": {"$ref": f"#/components/schemas/{schema}"}}}}}}


def test_references_that_fan_out_loop_or_nest_too_deep_are_refused(tmp_path: Path) -> None:
    fan_out = {f"F{i}": {"type": "object", "properties": {name: {"$ref": f"#/components/schemas/F{i + 1}"}
                                                          for name in "abcd"}} for i in range(12)}
    deep = {f"D{i}": {"type": "array", "items": {"$ref": f"#/components/schemas/D{i + 1}"}} for i in range(60)}
    schemas = {**fan_out, "F12": {"type": "string"}, **deep, "D60": {"type": "string"}, "Fine": {"type": "object"}}
    too_large = spec({"/wide": posting("F0", "wide"), "/deep": posting("D0", "deep"), "/fine": posting("Fine", "fine")},
                     components={"schemas": schemas})
    circle = spec({"/x": {"get": {"operationId": "x", "responses": {"200": {}},
                                  "parameters": [{"$ref": "#/components/parameters/A"}]}}},
                  components={"parameters": {"A": {"$ref": "#/components/parameters/B"},
                                             "B": {"$ref": "#/components/parameters/A"}}})
    cases = {"too-large": (too_large, "The OpenAPI spec is refused: the schemas of POST /wide (more than 10,000 nodes), "
                                      "POST /deep (deeper than 48 levels) grow past 10,000 nodes or 48 levels once "
                                      "their $refs are inlined; leave them out with "
                                      "exclude_operation_ids=['wide', 'deep']"),
             "circle": (circle, "The OpenAPI spec's references go round in a circle: "
                                "#/components/parameters/A -> #/components/parameters/B -> #/components/parameters/A")}
    for name, (document, said) in cases.items():
        saved = tmp_path / f"{name}.json"
        saved.write_text(json.dumps(document))
        assert load_in_a_process(saved) == said
    with Client(MCPServer.from_openapi(too_large, base_url="http://127.0.0.1:1",
                                       exclude_operation_ids=["wide", "deep"])) as client:
        assert [tool.name for tool in client.list_tools().tools] == ["fine"]


def test_a_yaml_alias_bomb_or_cycle_is_refused_and_plain_aliases_still_load(
        tmp_path: Path, listen: Callable[..., Recorder]) -> None:
    lines = ["openapi: 3.0.3", "info: {title: Bomb}", "paths:", "  /x:", "    post:", "      operationId: send",
             "      responses: {'200': {description: ok}}", "      requestBody:", "        content:",
             "          application/json:", "            schema: {$ref: '#/components/schemas/Bomb'}",
             "components:", "  schemas:", "    L0: &l0 {type: string, enum: [a, b, c, d, e, f, g, h, i]}"]
    lines += [f"    L{i}: &l{i} {{type: object, properties: {{" + ", ".join(f"p{j}: *l{i - 1}" for j in range(9))
              + "}}" for i in range(1, 9)]
    lines.append("    Bomb: *l8")
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("\n".join(lines) + "\n")
    assert len(bomb.read_bytes()) < 1500
    said = load_in_a_process(bomb)
    assert said.startswith(f"The OpenAPI spec {str(bomb)!r} is refused: its YAML aliases repeat ")
    assert said.endswith("nodes, more than the 100,000 a document may (an alias bomb?)")

    cycle = tmp_path / "cycle.yaml"
    cycle.write_text("openapi: 3.0.3\ninfo: {title: Loop}\npaths: {}\nx: &x [*x]\n")
    assert load_in_a_process(cycle) == (f"The OpenAPI spec {str(cycle)!r} is refused: the YAML node on line 4 "
                                        "holds an alias of itself, a cycle no JSON document has")

    api = listen(Recorder())
    shared = tmp_path / "shared.yaml"
    shared.write_text(yaml.safe_dump(spec({"/a": get("a"), "/b": get("b")})).replace(
        "  /a:\n    get:\n", "  /a:\n    get: &op\n", 1) + "x-reused: *op\n")
    with Client(MCPServer.from_openapi(str(shared), base_url=api.base)) as client:
        assert json.loads(text(client.call_tool("a", {})))["path"] == "/a"
