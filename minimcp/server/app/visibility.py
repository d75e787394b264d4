"""Which tools, resources and prompts a server shows and runs, decided at run time.

Two layers, both applied to listings and to calls alike, so what a client cannot see it cannot
call either:

- **enable/disable** (``mcp.disable("delete_all")``, ``mcp.disable(tags={"admin"})``): rules kept in
  the order they were given; a component is on unless the last rule that names it (by name, URI or
  one of its tags) turned it off. The same for every caller; a change is announced as
  ``list_changed``.
- **a per-request filter** (``MCPServer(component_filter=fn)``): ``fn(ctx, component) -> bool``
  with the request's ``Context`` (its ``user``, ``access_token`` scopes, ``headers``), to show a
  tool set per client or per user without restarting. A component it hides reads as unknown to that
  caller, so its existence is not revealed; a disabled one says it is disabled.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Callable, Literal

__all__ = ["KINDS", "ComponentFilter", "Kind", "Rule", "Visibility", "as_tags", "keys_of", "tags_of"]

Kind = Literal["tool", "resource", "prompt"]
KINDS: tuple[Kind, ...] = ("tool", "resource", "prompt")

#: ``(ctx, component) -> bool``: whether this request's caller may see and use ``component`` (a
#: ``Tool``, ``Resource``, ``ResourceTemplate`` or ``Prompt``, each with ``name`` and ``tags``).
ComponentFilter = Callable[[Any, Any], bool]


def tags_of(component: Any) -> frozenset[str]:
    """A component's tags; components built without any (by an extension, say) have none."""
    return getattr(component, "tags", None) or frozenset()


def keys_of(component: Any) -> frozenset[str]:
    """What a rule may name a component by: its name, and a resource's URI or template."""
    keys = {component.name}
    for attribute in ("uri", "uri_template"):
        value = getattr(component, attribute, None)
        if isinstance(value, str):
            keys.add(value)
    return frozenset(keys)


def as_tags(tags: Iterable[str] | None) -> frozenset[str]:
    """``tags=`` as given to a decorator: a set of strings (a lone string is one tag, not its letters)."""
    if tags is None:
        return frozenset()
    if isinstance(tags, str):
        return frozenset({tags})
    found = frozenset(tags)
    if not all(isinstance(tag, str) for tag in found):
        raise TypeError(f"tags must be strings, got {sorted(map(repr, found))}")
    return found


@dataclass(frozen=True)
class Rule:
    """One ``enable``/``disable`` call: what it names, and whether it turns them on."""

    names: frozenset[str]
    tags: frozenset[str]
    kinds: frozenset[str]
    enabled: bool

    def matches(self, kind: Kind, component: Any) -> bool:
        return kind in self.kinds and bool(self.names & keys_of(component) or self.tags & tags_of(component))


class Visibility:
    """The enable/disable rules of one server. ``_lock`` guards ``rules`` on write; readers take the
    tuple as it is (one attribute read), so a listing never waits for a change; where it is empty,
    everything is enabled and a caller need not ask ``enabled``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.rules: tuple[Rule, ...] = ()

    @staticmethod
    def rule(names: Iterable[str], tags: Iterable[str] | None, kind: Kind | Iterable[Kind] | None,
             enabled: bool) -> Rule:
        """The rule an ``enable``/``disable`` call states; it must name something."""
        named = frozenset(names)
        tagged = as_tags(tags)
        if not named and not tagged:
            raise ValueError("name at least one component or tag: enable('name', ...) or enable(tags={'tag'})")
        kinds = frozenset(KINDS if kind is None else [kind] if isinstance(kind, str) else kind)
        unknown = kinds - set(KINDS)
        if unknown:
            raise ValueError(f"kind must be one of {list(KINDS)}, got {sorted(unknown)}")
        return Rule(named, tagged, kinds, enabled)

    def add(self, rule: Rule) -> None:
        """Apply ``rule`` after every earlier one; an earlier rule naming exactly the same is
        replaced, so toggling one thing back and forth does not grow the list."""
        with self._lock:
            kept = tuple(r for r in self.rules if (r.names, r.tags, r.kinds) != (rule.names, rule.tags, rule.kinds))
            self.rules = (*kept, rule)

    def enabled(self, kind: Kind, component: Any) -> bool:
        state = True
        for rule in self.rules:
            if rule.matches(kind, component):
                state = rule.enabled
        return state

