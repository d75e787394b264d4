"""A shared backend over TLS with a client certificate, on a real redis-server serving TLS only.

The test makes a CA, a server certificate and a client certificate (``redis_support.tls_files``)
and starts ``redis-server --tls-port P --port 0 --tls-auth-clients yes``. With the CA and the
client certificate in the ``rediss://`` URL the server serves legacy elicitation; without the
client certificate, with a CA that signed nothing of Redis's, or as ``redis://``, the server stops
where it is built with one message naming TLS (never "retry shortly").
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Callable

import pytest
from pydantic import BaseModel
from redis_support import Node, TlsFiles, stopped, tls_files

from minimcp import Client
from minimcp.client.streamable_http import streamable_http_client
from minimcp.server import MCPServer
from minimcp.server.backends import BackendMisconfigured
from minimcp.server.mcpserver import Context
from minimcp.types import ElicitResult


class Ok(BaseModel):
    ok: bool


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[TlsFiles, Node]]:
    directory = tmp_path_factory.mktemp("tls")
    files = tls_files(directory / "certs")
    ssl = {"ssl": True, "ssl_ca_certs": str(files.ca), "ssl_certfile": str(files.client_cert),
           "ssl_keyfile": str(files.client_key)}
    with stopped([]) as nodes:
        nodes.append(Node(directory, "redis", *files.server_args(), tls=True, ssl=ssl).start())
        yield files, nodes[0]


def _refused(backend: str) -> str:
    with pytest.raises(BackendMisconfigured) as wrong:
        MCPServer("Secured", backend=backend)
    return str(wrong.value)


def test_with_the_ca_and_a_client_certificate_the_server_serves_elicitation(
        tls: tuple[TlsFiles, Node], serve_http: Callable[..., str]) -> None:
    files, redis = tls
    mcp = MCPServer("Secured", backend=f"rediss://127.0.0.1:{redis.port}/0?{files.query()}")
    assert repr(mcp.backend).startswith(f"RedisBackend('rediss://127.0.0.1:{redis.port}/0'")

    @mcp.tool()
    def confirm(door: str, ctx: Context) -> str:
        answer = ctx.elicit(f"Open {door}?", schema=Ok)
        return f"{door}: {answer.action} {answer.data.ok if answer.data else None}"

    def agree(context: Any, params: Any) -> ElicitResult:
        return ElicitResult(action="accept", content={"ok": True})

    with Client(streamable_http_client(serve_http(mcp)), mode="legacy", elicitation_callback=agree) as client:
        assert client.call_tool("confirm", {"door": "front"}).content[0].text == "front: accept True"
    with redis.client() as direct:
        assert direct.llen("minimcp:Secured:rs:keys") > 0
    mcp.close()
    mcp.backend.close()


def test_without_the_client_certificate_the_server_stops_naming_tls(tls: tuple[TlsFiles, Node]) -> None:
    files, redis = tls
    message = _refused(f"rediss://127.0.0.1:{redis.port}/0?{files.query(client=False)}")
    assert message.startswith(f"TLS with Redis at rediss://127.0.0.1:{redis.port}/0 failed"), message
    assert "ssl_certfile=" in message and "retry" not in message


def test_with_a_ca_that_signed_nothing_of_rediss_the_server_stops_naming_tls(tls: tuple[TlsFiles, Node]) -> None:
    files, redis = tls
    message = _refused(f"rediss://127.0.0.1:{redis.port}/0?{files.query(ca=files.other_ca)}")
    assert message.startswith(f"TLS with Redis at rediss://127.0.0.1:{redis.port}/0 failed"), message
    assert "CERTIFICATE_VERIFY_FAILED" in message and "ssl_ca_certs=" in message


def test_a_plain_url_for_a_tls_port_stops_the_server_naming_rediss(tls: tuple[TlsFiles, Node]) -> None:
    _, redis = tls
    message = _refused(f"redis://127.0.0.1:{redis.port}/0")
    assert message.startswith(f"Redis at redis://127.0.0.1:{redis.port}/0 serves TLS on that port: use rediss://"), \
        message


def test_a_missing_client_key_file_is_named(tls: tuple[TlsFiles, Node], tmp_path: Path) -> None:
    files, redis = tls
    missing = tmp_path / "client.key"
    message = _refused(f"rediss://127.0.0.1:{redis.port}/0?ssl_ca_certs={files.ca}&ssl_certfile={files.client_cert}"
                       f"&ssl_keyfile={missing}")
    assert "TLS" in message and str(missing) in message, message
