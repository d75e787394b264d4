"""Resources: static ones read by URI, and templates whose ``{placeholders}`` become arguments.

The public path; the code lives in ``minimcp.server.app.resources`` (``ReadResourceContents``,
what ``ctx.read_resource`` hands back, in ``minimcp.server.app.context``)."""

from minimcp.server.app.context import ReadResourceContents
from minimcp.server.app.resources import (
    BinaryResource,
    default_file_encoding,
    DEFAULT_RESOURCE_SECURITY,
    DirectoryResource,
    FileResource,
    FunctionResource,
    HttpResource,
    is_template,
    Resource,
    ResourceSecurity,
    ResourceSecurityError,
    ResourceTemplate,
    TextResource,
    to_contents,
)

__all__ = ["BinaryResource", "default_file_encoding", "DEFAULT_RESOURCE_SECURITY", "DirectoryResource", "FileResource", "FunctionResource", "HttpResource", "is_template", "ReadResourceContents", "Resource", "ResourceSecurity", "ResourceSecurityError", "ResourceTemplate", "TextResource", "to_contents"]
