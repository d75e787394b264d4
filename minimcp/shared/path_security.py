"""Checks for values that will become filesystem paths, at the official path ``mcp.shared.path_security``.

A resource template such as ``files://{+path}`` hands the client's text to code that may open a
file. ``safe_join(base, value)`` is the check to use when the sandbox root is known; the two
string checks serve :class:`~minimcp.server.app.resources.ResourceSecurity`, which runs
them on every template argument before the handler sees it.
"""

from __future__ import annotations

import string
from pathlib import Path


class PathEscapeError(ValueError):
    """``safe_join`` refused: the joined path would leave its base."""


def contains_path_traversal(value: str) -> bool:
    """Whether ``value``, read as a relative path (``/`` or ``\\`` separated), climbs above where it
    starts: ``..`` counts only as a whole component, so ``1.0..2.0`` is harmless."""
    depth = 0
    for part in value.replace("\\", "/").split("/"):
        if part == "..":
            depth -= 1
            if depth < 0:
                return True
        elif part not in ("", "."):
            depth += 1
    return False


def is_absolute_path(value: str) -> bool:
    """Whether ``value`` is absolute on POSIX or Windows (``/x``, ``\\x``, ``C:\\x``, ``C:x``): joined
    onto a base, such a value replaces the base instead of extending it."""
    if not value:
        return False
    if value[0] in "/\\":
        return True
    return len(value) >= 2 and value[1] == ":" and value[0] in string.ascii_letters


def safe_join(base: str | Path, *parts: str) -> Path:
    """``base`` joined with ``parts`` and resolved, or ``PathEscapeError`` when a part is absolute or
    holds a NUL, or the result (symlinks followed, at this moment) is outside ``base``."""
    root = Path(base).resolve()
    for part in parts:
        if "\0" in part:
            raise PathEscapeError(f"Path component contains a null byte; refusing to join onto {root}")
        if is_absolute_path(part):
            raise PathEscapeError(f"Path component {part!r} is absolute; refusing to join onto {root}")
    target = root.joinpath(*parts).resolve()
    if not target.is_relative_to(root):
        raise PathEscapeError(f"Path {target} escapes base {root}")
    return target


__all__ = ["PathEscapeError", "contains_path_traversal", "is_absolute_path", "safe_join"]
