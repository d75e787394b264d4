"""An HTTP API described by OpenAPI 3, as MCP tools: one tool per operation.

::

    mcp = MCPServer.from_openapi("https://api.example.com/openapi.json", session=session, tags=["pets"])

Each operation's path, query, header and cookie parameters and its JSON request body (its
properties, or one ``body`` argument) make the input schema, ``$ref`` resolved from the spec's
components. A call is one exchange over ``requests``: through ``session`` (its auth, headers,
cookies and adapters) or with ``auth=``, within ``timeout`` seconds from connecting to the last
byte, reading at most ``max_answer_bytes``. An answer of 400 or more, or a request that fails, is
an error result with the status and at most ``excerpt`` characters of the body, so a model can read
what the API said and the server keeps serving.

The spec is a dict, a file or a URL, in JSON or in YAML (YAML needs PyYAML: the ``openapi`` extra).

A spec names operations, never hosts, and a caller fills values, never URLs: requests go only to
``base_url``'s origin and under its path, redirects are followed only there, and the operator's
credentials go nowhere else. The modules: ``spec`` (reading the document, within bounds),
``operations`` (the tools and the values a call fills in), ``exchange`` (where a request may go,
and its deadline and size bound).
"""

from minimcp.server.app.openapi.exchange import MAX_REDIRECTS
from minimcp.server.app.openapi.operations import MAX_ANSWER_BYTES, OperationFilter, add_openapi_tools, from_openapi
from minimcp.server.app.openapi.spec import load_spec

__all__ = ["MAX_ANSWER_BYTES", "MAX_REDIRECTS", "OperationFilter", "add_openapi_tools", "from_openapi", "load_spec"]
