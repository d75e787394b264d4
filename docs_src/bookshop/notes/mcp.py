"""The notes app's tools, found at start-up, like admin.py."""

from minimcp.django import mcp
from minimcp.server.mcpserver import Context
from notes.models import Note


@mcp.tool(permission_required="notes.view_all_notes")
def all_notes(ctx: Context) -> list[str]:
    return [n.text for n in Note.objects.all()]     # ctx.user is request.user
