"""``MCPServer.from_openapi``: an HTTP API's OpenAPI 3 document as MCP tools.

The API is ``examples/petstore_api.py``, served by the test on a loopback port; the MCP server reads
its spec from there over HTTP and is itself served over HTTP (or run as
``examples/openapi_server.py`` in a process of its own), in both eras.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import pytest
import requests
import yaml

from conftest import EXAMPLES, ERAS, load_example, refusing_port, server_process
from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.jsonrpc import MCPError
from minimcp.server import MCPServer

TOKEN = "test-token"


@pytest.fixture
def api(serve_wsgi: Callable[[Any], str]) -> str:
    """The pet shop's base URL (its spec at ``/openapi.json``)."""
    return serve_wsgi(load_example("petstore_api").PetShop(TOKEN))


def signed_in() -> requests.Session:
    session = requests.Session()
    session.headers["Authorization"] = f"Bearer {TOKEN}"
    return session


def body(result: Any) -> Any:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


@ERAS
def test_each_operation_becomes_a_tool_with_its_parameters_and_body(api: str, serve_http: Callable[..., str],
                                                                     mode: str) -> None:
    mcp = MCPServer.from_openapi(f"{api}/openapi.json", session=signed_in())
    assert mcp.name == "Pet shop"
    with Client(serve_http(mcp), mode=mode) as client:
        tools = {tool.name: tool for tool in client.list_tools().tools}
        assert set(tools) == {"listPets", "addPet", "getPet", "deletePet", "readNote", "crash"}
        listing = tools["listPets"].input_schema
        assert listing["properties"]["species"]["enum"] == ["cat", "dog", "fish"]
        assert listing["properties"]["limit"]["description"] == "How many at most"
        assert listing["properties"]["limit"]["default"] == 20  # the API's, though nothing is sent for it
        assert listing.get("required", []) == []
        add = tools["addPet"].input_schema
        assert set(add["properties"]) == {"name", "species", "age", "category"}  # id is readOnly
        assert sorted(add["required"]) == ["name", "species"]
        assert add["properties"]["category"]["properties"]["parent"] == {}  # a cycle, cut
        assert add["properties"]["age"]["type"] == ["integer", "null"]
        assert tools["getPet"].input_schema["required"] == ["petId"]
        assert tools["getPet"].description == "GET /pets/{petId}: One pet"
        assert tools["getPet"].annotations.read_only_hint and tools["deletePet"].annotations.destructive_hint

        assert [pet["name"] for pet in body(client.call_tool("listPets", {"species": "dog"}))] == ["Rex"]
        added = body(client.call_tool("addPet", {"name": f"Nemo {mode}", "species": "fish", "age": 1}))
        assert body(client.call_tool("getPet", {"petId": added["id"]})) == added
        assert client.call_tool("deletePet", {"petId": added["id"]}).content[0].text.endswith("204 NO CONTENT")
        gone = client.call_tool("getPet", {"petId": added["id"]})
        assert gone.is_error and "answered 404 NOT FOUND" in gone.content[0].text
        assert f"No pet {added['id']}" in gone.content[0].text


def test_http_errors_are_error_results_with_the_status_and_a_bounded_excerpt(api: str) -> None:
    mcp = MCPServer.from_openapi(f"{api}/openapi.json", excerpt=300)  # no token
    with Client(mcp) as client:
        refused = client.call_tool("addPet", {"name": "Tom", "species": "cat"})
        assert refused.is_error
        assert f"POST {api}/v1/pets answered 401 UNAUTHORIZED" in refused.content[0].text
        assert "Sign in: send Authorization: Bearer <token>" in refused.content[0].text
        crashed = client.call_tool("crash", {}).content[0].text
        assert "answered 500 INTERNAL SERVER ERROR: Internal error: xxx" in crashed
        assert crashed.endswith("... (9716 more characters)") and len(crashed) < 500
        invalid = client.call_tool("getPet", {"petId": "seven"})
        assert invalid.is_error and "petId" in invalid.content[0].text
        assert body(client.call_tool("getPet", {"petId": 1}))["name"] == "Tom"  # still serving


def test_path_values_stay_in_their_segment_and_header_parameters_are_sent(api: str) -> None:
    with Client(MCPServer.from_openapi(f"{api}/openapi.json")) as client:
        note = body(client.call_tool("readNote", {"name": "a/../../pets", "X-Request-Id": "r-42"}))
    assert note == {"name": "a/../../pets", "request_id": "r-42"}


def test_auth_through_an_auth_object_and_a_refused_connection_is_an_error_result(api: str) -> None:
    class Bearer(requests.auth.AuthBase):
        def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
            request.headers["Authorization"] = f"Bearer {TOKEN}"
            return request

    spec = requests.get(f"{api}/openapi.json", timeout=10).json()
    with Client(MCPServer.from_openapi(spec, base_url=f"{api}/v1", auth=Bearer())) as client:
        assert body(client.call_tool("addPet", {"name": "Bo", "species": "dog"}))["id"] == 3
    with refusing_port() as port, Client(MCPServer.from_openapi(spec, base_url=f"http://127.0.0.1:{port}/v1",
                                                                 timeout=5)) as client:
        failed = client.call_tool("listPets", {})
    assert failed.is_error and f"GET http://127.0.0.1:{port}/v1/pets failed: " in failed.content[0].text
    assert "Connection refused" in failed.content[0].text


def test_tags_operation_ids_and_methods_choose_the_operations(api: str, tmp_path: Path) -> None:
    url = f"{api}/openapi.json"
    assert _names(MCPServer.from_openapi(url, tags=["pets"])) == {"listPets", "addPet", "getPet"}
    assert _names(MCPServer.from_openapi(url, methods=["GET"], exclude_tags=["debug"])) == {"listPets", "getPet"}
    assert _names(MCPServer.from_openapi(url, operation_ids=["crash", "deletePet"])) == {"crash", "deletePet"}
    saved = tmp_path / "spec.json"
    saved.write_text(requests.get(url, timeout=10).text)
    assert _names(MCPServer.from_openapi(str(saved), base_url=f"{api}/v1", exclude_operation_ids=["crash"],
                                         tags=["debug"])) == {"readNote"}


def test_a_spec_it_cannot_use_is_refused_with_what_to_do(api: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="give from_openapi\\(..., base_url="):
        MCPServer.from_openapi({"openapi": "3.1.0", "info": {"title": "x"}, "paths": {}, "servers": [{"url": "/v1"}]})
    with pytest.raises(ValueError, match="reads OpenAPI 3 documents"):
        MCPServer.from_openapi({"swagger": "2.0", "paths": {}}, base_url=api)
    with pytest.raises(ValueError, match="Could not read the OpenAPI spec at .*404"):
        MCPServer.from_openapi(f"{api}/missing.json")
    with pytest.raises(ValueError, match="Could not read the OpenAPI spec"):
        MCPServer.from_openapi(str(tmp_path / "nothing.json"))
    with pytest.raises(ValueError, match="does not contain"):
        MCPServer.from_openapi({"openapi": "3.0.0", "paths": {"/a": {"get": {"requestBody": {"content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/Nope"}}}}}}}}, base_url=api)


def test_a_yaml_spec_is_read_from_a_url_and_a_file_keeping_dates_as_text(api: str, serve_wsgi: Callable[[Any], str],
                                                                          tmp_path: Path) -> None:
    document = requests.get(f"{api}/openapi.json", timeout=10).json()
    document["paths"]["/pets"]["get"]["parameters"].append(
        {"name": "since", "in": "query", "schema": {"type": "string", "format": "date", "enum": ["2024-01-01"]}})
    written = yaml.safe_dump(document).replace("'2024-01-01'", "2024-01-01")  # a bare YAML date, as people write it
    assert "- 2024-01-01\n" in written

    def spec(environ: dict[str, Any], start_response: Callable[..., Any]) -> list[bytes]:
        start_response("200 OK", [("Content-Type", "application/yaml")])
        return [written.encode()]

    saved = tmp_path / "openapi.yaml"
    saved.write_text(written)
    for source in (f"{serve_wsgi(spec)}/openapi.yaml", str(saved)):
        mcp = MCPServer.from_openapi(source, base_url=f"{api}/v1", session=signed_in())
        with Client(mcp) as client:
            listing = next(tool for tool in client.list_tools().tools if tool.name == "listPets")
            assert listing.input_schema["properties"]["since"]["enum"] == ["2024-01-01"]
            assert [pet["name"] for pet in body(client.call_tool("listPets", {"species": "dog"}))] == ["Rex"]


def test_a_spec_that_is_neither_json_nor_yaml_or_not_an_object_says_so(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("openapi: [3.1\n  paths: {\n")
    with pytest.raises(ValueError, match="^Could not read the OpenAPI spec '.*broken.yaml': it is neither JSON "
                                         "\\(Expecting value.*\\) nor YAML \\(.*"):
        MCPServer.from_openapi(str(broken))
    scalar = tmp_path / "scalar.yaml"
    scalar.write_text("just some words\n")
    with pytest.raises(ValueError, match="^The OpenAPI spec '.*scalar.yaml' is not an OpenAPI document: it holds "
                                         "str, not an object$"):
        MCPServer.from_openapi(str(scalar))


def test_without_pyyaml_a_yaml_spec_says_what_to_install(tmp_path: Path) -> None:
    saved = tmp_path / "openapi.yaml"
    saved.write_text("openapi: 3.1.0\ninfo: {title: Shop}\npaths: {}\n")
    program = ("import sys; sys.modules['yaml'] = None\n"  # as on a machine without PyYAML
               "from minimcp.server import MCPServer\n"
               "try:\n"
               f"    MCPServer.from_openapi({str(saved)!r}, base_url='http://127.0.0.1:1')\n"
               "except ValueError as failure:\n"
               "    print(failure)\n")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (f"The OpenAPI spec {str(saved)!r} is not JSON (Expecting value: line 1 column 1 (char 0)); "
                           "if it is YAML, install PyYAML to read it (pip install 'minimcp-sync[openapi]')\n")


def _names(mcp: MCPServer) -> set[str]:
    with Client(mcp) as client:
        return {tool.name for tool in client.list_tools().tools}


@ERAS
def test_the_example_serves_an_api_it_reads_in_one_command(api: str, mode: str) -> None:
    command = [sys.executable, str(EXAMPLES / "openapi_server.py"), f"{api}/openapi.json", "--token", TOKEN,
               "--tag", "pets", "--port", "0"]
    with server_process(command) as server, Client(f"{server.base}/mcp", mode=mode) as client:
        assert {tool.name for tool in client.list_tools().tools} == {"listPets", "addPet", "getPet"}
        added = body(client.call_tool("addPet", {"name": "Kit", "species": "cat"}))
        assert body(client.call_tool("getPet", {"petId": added["id"]}))["name"] == "Kit"
        left_out = client.call_tool("deletePet", {"petId": added["id"]})
        assert left_out.is_error and "Unknown tool: deletePet" in left_out.content[0].text


@ERAS
def test_the_official_client_lists_and_calls_the_generated_tools(api: str, serve_http: Callable[..., str],
                                                                mode: str) -> None:
    import anyio
    import mcp as official

    url = serve_http(MCPServer.from_openapi(f"{api}/openapi.json", session=signed_in()))

    async def main() -> tuple[set[str], str, str]:
        async with official.Client(url, mode=mode) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
            note = await client.call_tool("readNote", {"name": "n1", "X-Request-Id": "official"})
            pet = await client.call_tool("getPet", {"petId": 2})
            return names, note.content[0].text, pet.content[0].text

    names, note, pet = anyio.run(main)
    assert names == {"listPets", "addPet", "getPet", "deletePet", "readNote", "crash"}
    assert json.loads(note) == {"name": "n1", "request_id": "official"}
    assert json.loads(pet)["name"] == "Rex"


def test_in_a_web_application_only_the_users_allowed_see_and_call_the_api(api: str, tmp_path: Path,
                                                                          serve_wsgi: Callable[[Any], str]) -> None:
    from minimcp.server.openapi import OperationFilter, add_openapi_tools

    shop = load_example("flask_library")
    app = shop.create_app(f"sqlite:///{tmp_path / 'library.db'}")
    with app.app_context():
        tokens = {"lin": shop.add_user("lin", librarian=True), "rae": shop.add_user("rae")}
    names = add_openapi_tools(app.extensions["minimcp"], f"{api}/openapi.json", select=OperationFilter(tags=["pets"]),
                              allowed=lambda user: user is not None and user.is_librarian,
                              requirement="a librarian account")
    assert names == ["listPets", "addPet", "getPet"]
    url = serve_wsgi(app) + "/mcp"
    seen = {}
    for user, token in tokens.items():
        http = requests.Session()
        http.headers["Authorization"] = f"Bearer {token}"
        with Client(streamable_http_client(url, http_client=http)) as client:
            seen[user] = {tool.name for tool in client.list_tools().tools} & set(names)
            if user == "rae":
                with pytest.raises(MCPError, match="requires a librarian account$"):
                    client.call_tool("listPets", {})
            else:
                assert [pet["name"] for pet in body(client.call_tool("listPets", {}))] == ["Tom", "Rex"]
    assert seen == {"lin": set(names), "rae": set()}
    with pytest.raises(TypeError, match="allowed= needs a server that knows its users"):
        add_openapi_tools(MCPServer("plain"), f"{api}/openapi.json", allowed=lambda user: True)
