"""Which tools, resources and prompts a server shows and runs, decided at run time.

The public path; the code lives in ``minimcp.server.app.visibility``."""

from minimcp.server.app.visibility import (
    as_tags,
    ComponentFilter,
    keys_of,
    Kind,
    KINDS,
    Rule,
    tags_of,
    Visibility,
)

__all__ = ["as_tags", "ComponentFilter", "keys_of", "Kind", "KINDS", "Rule", "tags_of", "Visibility"]
