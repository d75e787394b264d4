"""The two discovery documents: authorization-server metadata (RFC 8414) and protected-resource
metadata (RFC 9728). Both are public and cacheable for an hour."""

from __future__ import annotations

from dataclasses import dataclass

from werkzeug.wrappers import Request, Response

from minimcp.server.auth.json_response import json_response
from minimcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata

_CACHEABLE = {"Cache-Control": "public, max-age=3600"}


@dataclass
class MetadataHandler:
    metadata: OAuthMetadata

    def handle(self, request: Request) -> Response:
        return json_response(self.metadata, headers=_CACHEABLE)


@dataclass
class ProtectedResourceMetadataHandler:
    metadata: ProtectedResourceMetadata

    def handle(self, request: Request) -> Response:
        return json_response(self.metadata, headers=_CACHEABLE)
