"""The client side of the official MCP conformance harness, written against ``minimcp.Client`` only.

The harness starts a mock server per scenario and runs this program with the server's URL as the
last argument, the scenario in ``MCP_CONFORMANCE_SCENARIO``, the wire version in
``MCP_CONFORMANCE_PROTOCOL_VERSION`` and scenario data in ``MCP_CONFORMANCE_CONTEXT``::

    conformance client --command "python examples/conformance_client.py" --scenario tools_call

Each scenario is one function below; the checks live in the mock server, so a scenario passes
when this program makes the right requests and exits 0 (or, for the scenarios that expect a
refusal, such as a wrong ``iss``, exits with the provider's error before the forbidden request).

Every ``auth/*`` scenario connects with an OAuth provider from ``minimcp.client.auth`` and calls
the mock's one tool: the authorization code flow by default, a machine-to-machine provider for
the extension scenarios named in ``AUTH_PROVIDERS``.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
import requests.auth
from pydantic import AnyUrl

from minimcp import Client
from minimcp.client import ClientRequestContext
from minimcp.client.auth import InMemoryTokenStorage, OAuthClientProvider
from minimcp.client.auth.discovery import discover_protected_resource
from minimcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
    static_assertion_provider,
)
from minimcp.client.auth.extensions.identity_assertion import IdentityAssertionOAuthProvider, request_id_jag
from minimcp.client.auth.extensions.jwt_bearer import JWTBearerOAuthProvider
from minimcp.client.auth.wire import authorization_server_session
from minimcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata
from minimcp.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    HANDSHAKE_PROTOCOL_VERSIONS,
    ListRootsResult,
    Root,
    TextContent,
)

logger = logging.getLogger("conformance-client")


def accept_with_defaults(
    context: ClientRequestContext, params: ElicitRequestFormParams | ElicitRequestURLParams
) -> ElicitResult:
    """A user who accepts without touching a field: every default the form offers is submitted."""
    if isinstance(params, ElicitRequestURLParams):
        return ElicitResult(action="accept")
    properties = params.requested_schema.get("properties", {})
    content = {name: field["default"] for name, field in properties.items() if "default" in field}
    return ElicitResult(action="accept", content=content)


def fixed_sample(context: ClientRequestContext, params: CreateMessageRequestParams) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(type="text", text="This is a test response"), model="conformance-model",
        stop_reason="endTurn",
    )


def one_root(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[Root(uri="file:///workspace", name="Workspace")])


def list_only(client: Client, ctx: dict[str, Any]) -> None:
    client.list_tools()


def tools_call(client: Client, ctx: dict[str, Any]) -> None:
    client.list_tools()
    logger.info("%s", client.call_tool("add_numbers", {"a": 5, "b": 3}).content)


def call_each(*calls: tuple[str, dict[str, Any]]) -> Callable[[Client, dict[str, Any]], None]:
    """List tools, then make these calls in order."""

    def scenario(client: Client, ctx: dict[str, Any]) -> None:
        client.list_tools()
        for name, arguments in calls:
            logger.info("%s -> %s", name, client.call_tool(name, arguments).content)

    return scenario


def standard_headers(client: Client, ctx: dict[str, Any]) -> None:
    for tool in client.list_tools().tools:
        client.call_tool(tool.name, {})
    for resource in client.list_resources().resources:
        client.read_resource(resource.uri)
    for prompt in client.list_prompts().prompts:
        client.get_prompt(prompt.name, {})


def custom_headers(client: Client, ctx: dict[str, Any]) -> None:
    client.list_tools()
    for call in ctx.get("toolCalls", []):
        client.call_tool(call["name"], call.get("arguments"))


def invalid_tool_headers(client: Client, ctx: dict[str, Any]) -> None:
    for tool in client.list_tools().tools:
        stub = {name: "us-east-1" for name in tool.input_schema.get("properties", {})}
        client.call_tool(tool.name, stub)


def schema_preservation(client: Client, ctx: dict[str, Any]) -> None:
    tools = {tool.name: tool for tool in client.list_tools().tools}
    schema = tools["json_schema_2020_12_tool"].input_schema
    client.call_tool("json_schema_echo", {"schema": schema})


def call_first_tool(client: Client, ctx: dict[str, Any]) -> None:
    """What every auth scenario's server offers: one tool behind a token."""
    tools = client.list_tools().tools
    if tools:
        logger.info("%s -> %s", tools[0].name, client.call_tool(tools[0].name, {}).content)


# --- authorization ---------------------------------------------------------------------------

REDIRECT_URI = AnyUrl("http://localhost:3000/callback")
#: The Client ID Metadata Document URL the harness expects (it never fetches it successfully).
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


class ApprovingUser:
    """A user who approves at once: the authorization page is fetched without a browser and its
    redirect read, instead of followed, for the code, ``state`` and ``iss``."""

    def __init__(self) -> None:
        self._result: AuthorizationCodeResult | None = None

    def redirect(self, authorization_url: str) -> None:
        response = requests.get(authorization_url, allow_redirects=False, timeout=30)
        location = response.headers.get("Location")
        if not response.is_redirect or not location:
            raise RuntimeError(f"The authorization endpoint answered HTTP {response.status_code}, not a redirect")
        query = {name: values[0] for name, values in parse_qs(urlsplit(location).query).items()}
        self._result = AuthorizationCodeResult(code=query.get("code", ""), state=query.get("state"), iss=query.get("iss"))

    def callback(self) -> AuthorizationCodeResult:
        if self._result is None:
            raise RuntimeError("callback before redirect")
        result, self._result = self._result, None
        return result


def authorization_code(url: str, ctx: dict[str, Any]) -> requests.auth.AuthBase:
    """The default for auth scenarios; a ``client_id`` in the context is a pre-registered client."""
    storage = InMemoryTokenStorage()
    if ctx.get("client_id"):
        storage.set_client_info(OAuthClientInformationFull(
            client_id=ctx["client_id"], client_secret=ctx.get("client_secret"), redirect_uris=[REDIRECT_URI],
        ))
    user = ApprovingUser()
    return OAuthClientProvider(
        url,
        OAuthClientMetadata(client_name="minimcp-conformance-client", redirect_uris=[REDIRECT_URI]),
        storage,
        redirect_handler=user.redirect,
        callback_handler=user.callback,
        client_metadata_url=CLIENT_METADATA_URL,
    )


def client_credentials_basic(url: str, ctx: dict[str, Any]) -> requests.auth.AuthBase:
    return ClientCredentialsOAuthProvider(
        url, InMemoryTokenStorage(), ctx["client_id"], ctx["client_secret"], issuer=authorization_server_of(url)
    )


def client_credentials_jwt(url: str, ctx: dict[str, Any]) -> requests.auth.AuthBase:
    signer = SignedJWTParameters(
        issuer=ctx["client_id"], subject=ctx["client_id"], signing_key=ctx["private_key_pem"],
        signing_algorithm=ctx.get("signing_algorithm", "ES256"),
    )
    return PrivateKeyJWTOAuthProvider(
        url, InMemoryTokenStorage(), ctx["client_id"], signer.create_assertion_provider(),
        issuer=authorization_server_of(url),
    )


def workload_identity(url: str, ctx: dict[str, Any]) -> requests.auth.AuthBase:
    return JWTBearerOAuthProvider(
        url, InMemoryTokenStorage(), ctx["client_id"], static_assertion_provider(ctx["valid_jwt"]),
        issuer=authorization_server_of(url),
    )


def enterprise_id_jag(url: str, ctx: dict[str, Any]) -> requests.auth.AuthBase:
    def id_jag(audience: str, resource: str) -> str:
        return request_id_jag(
            ctx["idp_token_endpoint"], ctx["idp_id_token"], audience, resource, client_id=ctx["idp_client_id"]
        )

    return IdentityAssertionOAuthProvider(
        url, InMemoryTokenStorage(), ctx["client_id"], ctx["client_secret"], issuer=authorization_server_of(url),
        assertion_provider=id_jag, token_endpoint_auth_method="client_secret_basic",
    )


def authorization_server_of(url: str) -> str:
    """The issuer a machine client is configured with. A deployment knows it; the harness does not
    say, so it is read from the mock's protected resource metadata."""
    with authorization_server_session() as http:
        metadata = discover_protected_resource(http, url, None, timeout=30)
    if metadata is None:
        raise RuntimeError(f"{url} publishes no protected resource metadata")
    return metadata.authorization_servers[0]


AUTH_PROVIDERS: dict[str, Callable[[str, dict[str, Any]], requests.auth.AuthBase]] = {
    "auth/client-credentials-basic": client_credentials_basic,
    "auth/client-credentials-jwt": client_credentials_jwt,
    "auth/enterprise-managed-authorization": enterprise_id_jag,
    "auth/wif-jwt-bearer": workload_identity,
}


SCENARIOS: dict[str, Callable[[Client, dict[str, Any]], None]] = {
    "initialize": list_only,
    "tools_call": tools_call,
    "elicitation-sep1034-client-defaults": call_each(("test_client_elicitation_defaults", {})),
    "sse-retry": call_each(("test_reconnection", {})),
    "request-metadata": call_each(),
    "sep-2322-client-request-state": call_each(
        ("test_mrtr_echo_state", {}), ("test_mrtr_unrelated", {}), ("test_mrtr_no_state", {}),
        ("test_mrtr_no_result_type", {}),
    ),
    "http-standard-headers": standard_headers,
    "http-custom-headers": custom_headers,
    "http-invalid-tool-headers": invalid_tool_headers,
    "json-schema-ref-no-deref": list_only,
    "json-schema-2020-12-preservation": schema_preservation,
}


def mode_for(version: str | None) -> str:
    """Legacy versions shake hands; a pinned 2026-07-28 sends no probe (several legacy mocks
    answer any unknown method with ``{}``, which must not be mistaken for a discover result)."""
    if version is None:
        return "auto"
    return "legacy" if version in HANDSHAKE_PROTOCOL_VERSIONS else version


def main() -> int:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    url = sys.argv[-1]
    scenario = os.environ["MCP_CONFORMANCE_SCENARIO"]
    version = os.environ.get("MCP_CONFORMANCE_PROTOCOL_VERSION")
    ctx = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT", "{}"))
    auth = None
    if scenario.startswith("auth/"):
        auth = AUTH_PROVIDERS.get(scenario, authorization_code)(url, ctx)
    run = call_first_tool if auth is not None else SCENARIOS.get(scenario)
    if run is None:
        logger.error("No handler for scenario %r", scenario)
        return 1
    with Client(
        url,
        auth=auth,
        mode=mode_for(version),
        elicitation_callback=accept_with_defaults,
        sampling_callback=fixed_sample,
        list_roots_callback=one_root,
    ) as client:
        run(client, ctx)
    return 0


if __name__ == "__main__":
    sys.exit(main())
