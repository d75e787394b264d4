"""A request of one's own that names its target, as the official SDK spells it: ``name_param`` on
the request class says which params key the client sends as the ``Mcp-Name`` header, in either
era, and a request that lacks it fails before anything is sent. Each answer is measured against the
official client (mcp 2.3.0) sending its own such request to the same minimcp server."""

from __future__ import annotations

from typing import Any, Callable, Literal

import anyio
import mcp as official
import mcp_types as official_types
import pytest

from minimcp import Client
from minimcp.server import Server
from minimcp.types import Request, RequestParams, Result


class JobParams(RequestParams):
    job_id: str | None = None


class JobStatusRequest(Request[JobParams, Literal["acme/jobs/status"]]):
    name_param = "jobId"


class JobStatus(Result):
    mcp_name: str | None = None


class OfficialJobParams(official_types.RequestParams):
    job_id: str | None = None


class OfficialJobStatusRequest(official_types.Request[OfficialJobParams, Literal["acme/jobs/status"]]):
    name_param = "jobId"


class OfficialJobStatus(official_types.Result):
    mcp_name: str | None = None


def jobs() -> Server[Any]:
    """Answers with the ``Mcp-Name`` header its request came with."""
    server: Server[Any] = Server("jobs")
    server.add_request_handler("acme/jobs/status", JobParams,
                               lambda ctx, params: {"mcpName": (ctx.transport.headers or {}).get("Mcp-Name")})
    return server


def official_status(url: str, mode: str, job_id: str | None) -> str | None:
    """The ``Mcp-Name`` the server saw from the official client, or the ``ValueError`` it raised instead."""

    async def main() -> str | None:
        async with official.Client(url, mode=mode) as client:
            request = OfficialJobStatusRequest(method="acme/jobs/status", params=OfficialJobParams(job_id=job_id))
            try:
                return (await client.session.send_request(request, OfficialJobStatus)).mcp_name
            except ValueError as refused:
                return f"ValueError: {refused}"

    return anyio.run(main)


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_name_param_travels_as_mcp_name_in_both_eras(serve_http: Callable[..., str], mode: str) -> None:
    url = serve_http(jobs())
    with Client(url, mode=mode) as client:
        plain = client.session.send_request(
            JobStatusRequest(method="acme/jobs/status", params=JobParams(job_id="j-42")), JobStatus)
        encoded = client.session.send_request(
            JobStatusRequest(method="acme/jobs/status", params=JobParams(job_id="tâche 7")), JobStatus)
    assert plain.mcp_name == official_status(url, mode, "j-42") == "j-42"
    assert encoded.mcp_name == official_status(url, mode, "tâche 7") == "=?base64?dMOiY2hlIDc=?="


def test_a_request_without_its_name_fails_before_it_is_sent(serve_http: Callable[..., str]) -> None:
    url = serve_http(jobs())
    with Client(url, mode="auto") as client, pytest.raises(ValueError) as ours:
        client.session.send_request(JobStatusRequest(method="acme/jobs/status", params=JobParams()), JobStatus)
    assert f"ValueError: {ours.value}" == official_status(url, "auto", None)
    assert str(ours.value) == "acme/jobs/status requires params['jobId'] for Mcp-Name"


def test_a_request_without_name_param_sends_no_mcp_name(serve_http: Callable[..., str]) -> None:
    class PlainRequest(Request[JobParams, Literal["acme/jobs/status"]]):
        pass

    assert Request.name_param is None and JobStatusRequest.name_param == "jobId"
    with Client(serve_http(jobs()), mode="legacy") as client:
        answer = client.session.send_request(
            PlainRequest(method="acme/jobs/status", params=JobParams(job_id="j-42")), JobStatus)
    assert answer.mcp_name is None
