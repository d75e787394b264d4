"""The notes app's MCP tools: found at start-up like admin.py, run as the signed-in user."""

import time

from pydantic import BaseModel, Field

from minimcp.django import mcp
from minimcp.server.mcpserver import Context
from notes.models import Note


class Confirm(BaseModel):
    confirm: bool = Field(description="Delete this note for good?")


@mcp.tool()
def whoami(ctx: Context) -> str:
    """The signed-in user's name."""
    return ctx.user.get_username()


@mcp.tool()
def my_notes(ctx: Context) -> list[str]:
    """Your notes, as "id: text"."""
    return [f"{note.id}: {note.text}" for note in Note.objects.filter(owner=ctx.user)]


@mcp.tool()
def add_note(text: str, ctx: Context) -> int:
    """Add a note; returns its id."""
    return Note.objects.create(owner=ctx.user, text=text).id


@mcp.tool()
def delete_note(note_id: int, ctx: Context) -> str:
    """Delete one of your notes, after asking you to confirm."""
    note = Note.objects.filter(pk=note_id, owner=ctx.user).first()
    if note is None:
        return f"You have no note {note_id}."
    answer = ctx.elicit(f"Delete note {note_id} ({note.text!r})?", schema=Confirm)
    if answer.action != "accept" or not answer.data.confirm:
        return "Kept it."
    note.delete()
    return f"Deleted note {note_id}."


@mcp.tool(task=True)
def wait_for_note(text: str, ctx: Context, seconds: float = 60.0) -> str:
    """Run as a task: wait (up to ``seconds``, at most ten minutes) until you have a note containing ``text``."""
    deadline = time.monotonic() + min(seconds, 600.0)
    while True:
        if Note.objects.filter(owner=ctx.user, text__contains=text).exists():
            return f"{ctx.user.get_username()} has a note with {text!r}."
        if ctx.cancelled or time.monotonic() >= deadline:
            return f"{ctx.user.get_username()} has no note with {text!r} yet."
        time.sleep(0.1)


@mcp.tool(permission_required="notes.view_all_notes")
def all_notes() -> list[str]:
    """Every user's notes (needs the notes.view_all_notes permission)."""
    return [f"{note.owner.get_username()}: {note.text}" for note in Note.objects.select_related("owner")]
