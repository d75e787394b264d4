"""The bounds the core keeps, declared once, and how a constructor's keywords become option objects.

A server takes its options as small frozen objects (``Limits`` here, ``HTTPOptions`` at the HTTP
edge, ``TaskOptions`` in the tasks extension, ``AuthOptions`` with the authorization code) and
passes each down whole, so an option is declared, with its default, in one place. A constructor
also takes each field as a keyword of its own (``MCPServer(max_workers=8)``): ``gather`` builds
the object from those keywords, refusing the two forms together, and ``refuse_unknown`` names a
keyword nobody took and what to pass instead.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from typing_extensions import TypedDict

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

OptionsT = TypeVar("OptionsT", bound="DataclassInstance")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """How much of the process one server, and one caller of it, may hold at once.

    Every bound is there so that a busy or hostile caller slows itself down, not the others: a
    request over a bound is refused at once, with a message that names it, and only the total
    caps ever make a request wait (for at most ``worker_wait_timeout``).
    """

    #: Worker threads running calls at once (default 32): a thread per call in flight, and the
    #: threads are the server's memory and its GIL turns; past them a call waits for a free one.
    max_workers: int = 32
    #: Seconds a call waits for a free worker before it is answered "Server busy" (default 30):
    #: an overloaded server answers instead of queueing without end.
    worker_wait_timeout: float = 30.0
    #: Seconds a worker waits for the client's answer to a question (elicitation, sampling, roots;
    #: default 600): a client that never answers gives the worker back.
    back_channel_timeout: float = 600.0
    #: Calls one principal may have running at once (default ``None``: a quarter of
    #: ``max_workers``, so a caller at its full share leaves three quarters of the pool to others).
    max_calls_per_principal: int | None = None
    #: Legacy questions one principal may leave unanswered at once, each holding its call's worker
    #: (default ``None``: half its calls, so it can always compute).
    max_questions_per_principal: int | None = None
    #: ``subscriptions/listen`` streams one principal may hold open (default ``None``: a sixteenth
    #: of the server's 1024, as a client needs one or two and sixteen callers at their full share
    #: still leave the server's bound to reach).
    max_listens_per_principal: int | None = None


class LimitKeywords(TypedDict, total=False):
    """``Limits``' fields as keywords of a server's constructor (``MCPServer(max_workers=8)``)."""

    max_workers: int
    worker_wait_timeout: float
    back_channel_timeout: float
    max_calls_per_principal: int | None
    max_questions_per_principal: int | None
    max_listens_per_principal: int | None


def gather(owner: str, parameter: str, given: OptionsT | None, kind: type[OptionsT], keywords: dict[str, Any],
           aliases: Mapping[str, str] | None = None) -> OptionsT:
    """The option object ``given`` as ``parameter=``, else one of ``kind`` built from its fields'
    keywords among ``keywords``, which are taken out of it (``aliases``: keyword -> field, for a
    field a constructor has long spelled otherwise). Raises ``TypeError`` when both are given: an
    object and a keyword it also holds would leave it unclear which one counts."""
    aliases = aliases or {}
    names = {field.name for field in dataclasses.fields(kind)} - set(aliases.values()) | set(aliases)
    taken = [key for key in keywords if key in names]
    if given is not None:
        if taken:
            raise TypeError(
                f"{owner}() got {parameter}= and {', '.join(f'{key}=' for key in taken)}, which {parameter} holds "
                f"too: pass {aliases.get(taken[0], taken[0])}= inside {parameter}={kind.__name__}(...), or drop "
                f"{parameter}=")
        return given
    return kind(**{aliases.get(key, key): keywords.pop(key) for key in taken})


def refuse_unknown(owner: str, keywords: Mapping[str, Any], accepted: Iterable[str], elsewhere: str = "",
                   aliases: Mapping[str, str] | None = None) -> None:
    """Raise the ``TypeError`` of the first of ``keywords`` nobody took, as Python words it, with
    the accepted keyword it is closest to (the keyword ``aliases`` spells a field by, for the
    field's own name), else ``elsewhere``, a sentence on where other options go."""
    if not keywords:
        return
    name = next(iter(keywords))
    spelled = {field: keyword for keyword, field in (aliases or {}).items()}
    close = [spelled[name]] if name in spelled else difflib.get_close_matches(name, list(accepted), n=1)
    hint = f"did you mean {close[0]}=?" if close else elsewhere
    raise TypeError(f"{owner}() got an unexpected keyword argument {name!r}" + (f"; {hint}" if hint else ""))


def keyword_names(*typed_dicts: Any) -> set[str]:
    """Every keyword the ``TypedDict`` classes given declare, for ``refuse_unknown``."""
    return {key for typed_dict in typed_dicts for key in typed_dict.__required_keys__ | typed_dict.__optional_keys__}
