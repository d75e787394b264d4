"""The official SDK's ``mcp.client.auth.utils`` names, for programs ported by the rule.

Each is minimcp's own function under the official name; the ``response`` helpers read a
``requests.Response``. The httpx request builders and async response handlers of the official
module have no counterpart: here the provider makes those requests itself.
"""

from __future__ import annotations

import requests

from minimcp.client.auth.challenge import challenge_param
from minimcp.client.auth.discovery import authorization_server_metadata_urls as build_oauth_authorization_server_metadata_discovery_urls
from minimcp.client.auth.discovery import issuers_match, union_scopes
from minimcp.client.auth.discovery import protected_resource_metadata_urls as build_protected_resource_metadata_discovery_urls
from minimcp.client.auth.discovery import select_scope as get_client_metadata_scopes
from minimcp.client.auth.registration import is_valid_client_metadata_url, should_use_client_metadata_url


def extract_field_from_www_auth(response: requests.Response, field_name: str) -> str | None:
    """A parameter of the response's Bearer or DPoP challenge."""
    return challenge_param(response.headers.get("WWW-Authenticate"), field_name)


def extract_scope_from_www_auth(response: requests.Response) -> str | None:
    return extract_field_from_www_auth(response, "scope")


def extract_resource_metadata_from_www_auth(response: requests.Response) -> str | None:
    if response.status_code not in (401, 403):
        return None
    return extract_field_from_www_auth(response, "resource_metadata")


__all__ = [
    "build_oauth_authorization_server_metadata_discovery_urls",
    "build_protected_resource_metadata_discovery_urls",
    "extract_field_from_www_auth",
    "extract_resource_metadata_from_www_auth",
    "extract_scope_from_www_auth",
    "get_client_metadata_scopes",
    "is_valid_client_metadata_url",
    "issuers_match",
    "should_use_client_metadata_url",
    "union_scopes",
]
