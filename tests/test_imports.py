"""What importing minimcp loads: each entry point only what it needs, so a command-line tool or a
client stays cheap to start; names imported on first use are the same objects as at their home.

Each check runs in a fresh interpreter: this one has imported everything already.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

#: Third-party packages and minimcp layers that each entry point must leave unimported.
HEAVY = ("requests", "urllib3", "werkzeug", "opentelemetry", "jsonschema", "minimcp.server", "minimcp.client",
         "pydantic.networks", "importlib.metadata")
ALLOWED = {
    "minimcp": set(),
    "minimcp.client": {"minimcp.client"},
    "minimcp.server": {"minimcp.server"},
}


def _loaded_after(statement: str) -> set[str]:
    program = f"import sys, json\n{statement}\nprint(json.dumps(sorted(sys.modules)))"
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    return set(json.loads(done.stdout.splitlines()[-1]))


def _heavy(modules: set[str]) -> set[str]:
    return {name for name in HEAVY if name in modules}


@pytest.mark.parametrize("module", sorted(ALLOWED))
def test_importing_an_entry_point_loads_no_transport_stack_and_no_other_layer(module: str) -> None:
    """``import minimcp.client`` brings neither the server nor ``requests`` (loaded with the first
    HTTP client), ``import minimcp.server`` neither the client nor werkzeug, and neither one
    OpenTelemetry (loaded with the first span) nor a pydantic validator (built on first use)."""
    loaded = _loaded_after(f"import {module}")
    assert _heavy(loaded) == ALLOWED[module]
    assert "pydantic.plugin._loader" not in loaded  # no validator was built


def test_an_http_client_loads_requests_when_it_connects() -> None:
    """The first ``Client("http://...")`` brings the HTTP transport; only then is ``requests`` needed."""
    loaded = _loaded_after("from minimcp import Client\nClient('http://127.0.0.1:9/mcp')._transport()")
    assert {"requests", "minimcp.client.transports.http"} <= loaded
    assert "minimcp.server" not in loaded


def test_names_imported_on_first_use_are_the_objects_at_their_home() -> None:
    import minimcp
    import minimcp.client
    import minimcp.client.transports as transports
    import minimcp.client.transports.http as http
    import minimcp.types as types

    for name in ("DEFAULT_MAX_SSE_EVENT_SIZE", "DEFAULT_RETRY_MS", "MAX_RESUME_ATTEMPTS", "STANDALONE_OPEN_TIMEOUT",
                 "HttpTransport"):
        assert getattr(transports, name) is getattr(http, name)
        assert name in dir(transports) and name in transports.__all__
    assert minimcp.Client is minimcp.client.Client
    assert "PaginatedRequest" in dir(types) and "JSONRPCRequest" in dir(types)
    with pytest.raises(AttributeError):
        transports.NoSuchName  # noqa: B018


def test_a_paginated_request_is_made_once() -> None:
    """The first access makes the class, every later one (and ``from ... import``) finds it."""
    program = ("import minimcp.types as t\nfirst = t.PaginatedRequest\nfrom minimcp.types import PaginatedRequest\n"
               "print(first is t.PaginatedRequest is PaginatedRequest)")
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "True"


def test_a_paginated_request_made_on_first_use_is_a_request_of_its_own_method() -> None:
    from typing import Literal

    from minimcp.types import PaginatedRequest, Request

    class ListWidgets(PaginatedRequest[Literal["acme/widgets/list"]]):
        pass

    assert issubclass(PaginatedRequest, Request)
    assert PaginatedRequest.__qualname__ == "PaginatedRequest" and PaginatedRequest.__module__ == "minimcp.types"
    assert ListWidgets.model_validate({"method": "acme/widgets/list"}).params is None
    assert ListWidgets.model_validate({"method": "acme/widgets/list", "params": {"cursor": "c"}}).params.cursor == "c"
    with pytest.raises(ValueError):
        ListWidgets.model_validate({"method": "acme/other"})


def test_a_pydantic_url_given_as_a_root_is_its_text() -> None:
    """``Root.uri`` takes a pydantic URL object as well as text, though minimcp itself never imports
    the module URL objects come from."""
    from pydantic import AnyUrl

    from minimcp.types import Root

    assert Root(uri=AnyUrl("file:///home/me/project")).uri == "file:///home/me/project"
