"""Display helpers for the metadata objects servers publish."""

from __future__ import annotations

from typing import Any


def get_display_name(obj: Any) -> str:
    """The name a person should see: the title when set, else (for tools) the annotations' title, else the name."""
    title = getattr(obj, "title", None)
    if title:
        return title
    annotations = getattr(obj, "annotations", None)
    annotation_title = getattr(annotations, "title", None)
    if annotation_title:
        return annotation_title
    return obj.name
