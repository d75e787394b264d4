"""``manage.py check``: what makes MCP clients fail in ways a user cannot read.

With ``OAUTH`` on and no ``mcp.well_known_urls`` at the site's root a client gets the 401, looks
for the metadata, finds nothing and gives up, and the user only sees that sign-in "does not work".
With the endpoint mounted as ``path("mcp/", ...)``, a client given ``/mcp`` posts there and gets
``APPEND_SLASH``'s redirect, which a POST cannot follow (a 500 in DEBUG). Both are said at start-up.
"""

from __future__ import annotations

from typing import Any

from django.core.checks import CheckMessage, Tags, Warning, register
from django.urls import NoReverseMatch, Resolver404, resolve, reverse


@register(Tags.urls)
def oauth_urls(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    from minimcp.django import mcp

    if not mcp.oauth:
        return []
    try:
        endpoint = reverse("minimcp:endpoint")
    except NoReverseMatch:
        return [Warning("MINIMCP['OAUTH'] is on but the MCP endpoint has no URL",
                        hint='Add path("mcp", include(mcp.urls)) to your URLconf.', id="minimcp.W001")]
    try:
        found = resolve("/.well-known/oauth-protected-resource" + endpoint)
    except Resolver404:
        found = None
    if found is None or found.namespace != "minimcp_well_known":
        return [Warning("MINIMCP['OAUTH'] is on but MCP clients cannot find how to sign in",
                        hint='Add path(".well-known/", include(mcp.well_known_urls)) to your root URLconf.',
                        id="minimcp.W002")]
    return []


@register(Tags.urls)
def endpoint_without_slash(app_configs: Any, **kwargs: Any) -> list[CheckMessage]:
    try:
        endpoint = reverse("minimcp:endpoint")
    except NoReverseMatch:
        return []
    bare = endpoint.rstrip("/")
    if not bare:
        return []
    try:
        found = resolve(bare)
    except Resolver404:
        found = None
    if found is None or found.view_name != "minimcp:endpoint":
        prefix = bare.rsplit("/", 1)[-1]
        return [Warning(f"The MCP endpoint answers at {endpoint} but not at {bare}: a client given {bare} gets a "
                        "redirect that its POST cannot follow",
                        hint=f'Mount it without the slash, path("{prefix}", include(mcp.urls)): it serves both.',
                        id="minimcp.W003")]
    return []
