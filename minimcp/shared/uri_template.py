"""RFC 6570 URI templates, both ways: ``expand`` builds a URI, ``match`` reads the variables back.

The official import path is ``mcp.shared.uri_template``. Supported: levels 1-3 (``{var}``,
``{+var}``, ``{#var}``, ``{.var}``, ``{/var}``, ``{;var}``, ``{?var}``, ``{&var}``, several
variables per expression) and the explode modifier on the path-like operators (``{/var*}``,
``{.var*}``, ``{;var*}``), whose value is a list. Not supported, as in the official SDK: the prefix
modifier ``{var:N}`` and query explode ``{?var*}``; such templates fail at parse time.

Matching is the inverse RFC 6570 leaves to the implementer. Here the path part is one regular
expression built at parse time (values are percent-decoded; a simple variable never spans ``/``,
``?`` or ``#``; ``{+var}`` spans ``/``), and ``{?...}``/``{&...}`` variables are read from the query
string in any order, each optional. Regular expressions over a URI bounded in length keep matching
cheap; the URI length is checked first.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Mapping, Sequence, TypeAlias, cast
from urllib.parse import quote, unquote

Operator: TypeAlias = Literal["", "+", "#", ".", "/", ";", "?", "&"]

DEFAULT_MAX_TEMPLATE_LENGTH = 8_192
DEFAULT_MAX_VARIABLES = 256
DEFAULT_MAX_URI_LENGTH = 65_536

_EXPRESSION = re.compile(r"\{([^}]*)\}")
_VARNAME = re.compile(r"^[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*$")
_RESERVED = ":/?#[]@!$&'()*+,;="
#: operator -> (what starts the expansion, what separates values, whether reserved characters pass)
_SPEC: dict[str, tuple[str, str, bool]] = {
    "": ("", ",", False), "+": ("", ",", True), "#": ("#", ",", True), ".": (".", ".", False),
    "/": ("/", "/", False), ";": (";", ";", False), "?": ("?", "&", False), "&": ("&", "&", False),
}
#: What one value may contain when matched, per operator.
_VALUE = {"": "[^/?#,]", "+": "[^?#]", "#": "[^?]", ".": "[^/?#.]", "/": "[^/?#]", ";": "[^/?#;]",
          "?": "[^&#]", "&": "[^&#]"}


class InvalidUriTemplate(ValueError):
    """A template that cannot be parsed; says where and why."""

    def __init__(self, message: str, *, template: str, position: int | None = None) -> None:
        where = f" at position {position}" if position is not None else ""
        super().__init__(f"Invalid URI template {template!r}{where}: {message}")
        self.template = template
        self.position = position


@dataclass(frozen=True)
class Variable:
    name: str
    operator: Operator = ""
    explode: bool = False


#: A parsed template piece: a literal, or an expression as its operator and variables.
_Part: TypeAlias = str | tuple[str, list[Variable]]


class UriTemplate:
    """A parsed template. Build with :meth:`parse`; immutable and safe to share between threads."""

    def __init__(self, template: str, variables: list[Variable], pattern: re.Pattern[str],
                 groups: dict[str, Variable], query: list[Variable]) -> None:
        self.template = template
        self._variables = variables
        self._pattern = pattern
        self._groups = groups
        self._query = query  # the variables read leniently from the query string

    @staticmethod
    def is_template(value: str) -> bool:
        """Whether ``value`` has at least one ``{expression}``."""
        return bool(_EXPRESSION.search(value))

    @classmethod
    def parse(
        cls,
        template: str,
        *,
        max_length: int = DEFAULT_MAX_TEMPLATE_LENGTH,
        max_variables: int = DEFAULT_MAX_VARIABLES,
    ) -> UriTemplate:
        if len(template) > max_length:
            raise InvalidUriTemplate(f"longer than {max_length} characters", template=template)
        parts: list[_Part] = []
        variables: list[Variable] = []
        last = 0
        for found in _EXPRESSION.finditer(template):
            literal = template[last:found.start()]
            if "{" in literal or "}" in literal:
                raise InvalidUriTemplate("unbalanced braces", template=template, position=last)
            if literal:
                parts.append(literal)
            body, operator = found.group(1), ""
            if body[:1] in _SPEC and body[:1] != "":
                operator, body = body[0], body[1:]
            parsed = [_variable(name.strip(), operator, template, found.start()) for name in body.split(",")]
            variables.extend(parsed)
            if len(variables) > max_variables:
                raise InvalidUriTemplate(f"more than {max_variables} variables", template=template)
            parts.append((operator, parsed))
            last = found.end()
        tail = template[last:]
        if "{" in tail or "}" in tail:
            raise InvalidUriTemplate("unbalanced braces", template=template, position=last)
        if tail:
            parts.append(tail)
        names = [v.name for v in variables]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            raise InvalidUriTemplate(f"variable {duplicate!r} appears twice", template=template)
        path, query = _split_query(parts)
        _check_boundaries(template, path)
        groups: dict[str, Variable] = {}
        pattern = ""
        for part in path:
            if isinstance(part, str):
                pattern += re.escape(part)
            else:
                if pattern.endswith("*)"):
                    pattern = pattern[:-2] + "*?)"  # {name}{.ext}: the name yields to what follows it
                pattern += _expression_pattern(*part, groups)
        return cls(template, variables, re.compile(pattern), groups, query)

    @property
    def variables(self) -> list[Variable]:
        return list(self._variables)

    @property
    def variable_names(self) -> list[str]:
        return [v.name for v in self._variables]

    @property
    def query_variable_names(self) -> frozenset[str]:
        """The variables read from the query string, each optional and in any order."""
        return frozenset(v.name for v in self._query)

    def expand(self, variables: Mapping[str, str | Sequence[str]]) -> str:
        """The URI for ``variables``; an absent (or ``None``) variable expands to nothing."""

        def replace(found: re.Match[str]) -> str:
            body, operator = found.group(1), ""
            if body[:1] in _SPEC and body[:1] != "":
                operator, body = body[0], body[1:]
            first, separator, reserved = _SPEC[operator]
            parts = []
            for name in (part.strip() for part in body.split(",")):
                explode = name.endswith("*")
                name = name.rstrip("*")
                value = variables.get(name)
                if value is None:
                    continue
                values = [value] if isinstance(value, str) else list(value)
                encoded = [quote(str(v), safe=_RESERVED if reserved else "") for v in values]
                joined = (separator if explode else ",").join(encoded)
                if operator in (";", "?", "&"):
                    if explode:
                        joined = separator.join(f"{name}={v}" for v in encoded)
                    else:
                        joined = f"{name}={joined}" if joined or operator != ";" else name
                parts.append(joined)
            return first + separator.join(parts) if parts else ""

        return _EXPRESSION.sub(replace, self.template)

    def match(self, uri: str, *, max_uri_length: int = DEFAULT_MAX_URI_LENGTH) -> dict[str, str | list[str]] | None:
        """The variables ``uri`` was expanded from, percent-decoded, or ``None`` if it does not fit.

        A query variable the URI leaves out is absent from the result, so the function's default
        applies; every other expression must be there (its value may be empty).
        """
        if len(uri) > max_uri_length:
            return None
        path, query = uri, ""
        if self._query:
            path, _, query = uri.partition("#")[0].partition("?")
        found = self._pattern.fullmatch(path)
        if found is None:
            return None
        values: dict[str, str | list[str]] = {}
        for group, raw in found.groupdict().items():
            variable = self._groups[group]
            if variable.explode:
                _, separator, _ = _SPEC[variable.operator]
                items = raw.split(separator)[1:] if raw else []
                if variable.operator == ";":
                    items = [item.partition("=")[2] for item in items]
                values[variable.name] = [unquote(item) for item in items]
            else:
                values[variable.name] = unquote(raw or "")
        wanted = self.query_variable_names
        for pair in query.split("&") if query else []:
            name, _, value = pair.partition("=")  # names stay encoded: %71=x must not shadow q
            if name in wanted and name not in values:
                values[name] = unquote(value)  # "+" stays a plus (RFC 3986, not a form)
        return values

    def __str__(self) -> str:
        return self.template

    def __repr__(self) -> str:
        return f"UriTemplate({self.template!r})"


def _variable(name: str, operator: str, template: str, position: int) -> Variable:
    explode = name.endswith("*")
    name = name.rstrip("*")
    if ":" in name:
        raise InvalidUriTemplate("the prefix modifier {var:N} is not supported", template=template, position=position)
    if not _VARNAME.match(name):
        raise InvalidUriTemplate(f"{name!r} is not a variable name", template=template, position=position)
    if explode and operator not in ("/", ".", ";"):
        raise InvalidUriTemplate(
            "explode (*) is supported on {/var*}, {.var*} and {;var*} only", template=template, position=position
        )
    return Variable(name, operator, explode)  # type: ignore[arg-type]


def _split_query(parts: list[_Part]) -> tuple[list[_Part], list[Variable]]:
    """The path parts, matched strictly, and the variables of a trailing ``{?...}{&...}`` run, read
    leniently from the query string. The run must start with ``?`` and the path before it may hold
    no ``?`` or ``#`` of its own, else the query cannot be split off and everything is strict."""
    split = len(parts)
    while split and not isinstance(parts[split - 1], str) and parts[split - 1][0] in ("?", "&"):
        split -= 1
    if split == len(parts) or parts[split][0] != "?":
        return parts, []
    for part in parts[:split]:
        if ("?" in part or "#" in part) if isinstance(part, str) else part[0] in ("?", "#"):
            return parts, []
    query = cast("list[tuple[str, list[Variable]]]", parts[split:])  # the while loop left only expressions after split
    return parts[:split], [variable for _, names in query for variable in names]


def _check_boundaries(template: str, path: list[_Part]) -> None:
    """Refuse, as the official SDK does, what matching could only guess at: two variables with
    nothing between them to tell where one ends (``{a}{b}``, ``{/a}{/b*}``), and more than one
    variable that may span segments (``{+var}``, ``{#var}``, an explode)."""
    spanning = [v.name for part in path if not isinstance(part, str) for v in part[1]
                if v.explode or v.operator in ("+", "#")]
    if len(spanning) > 1:
        raise InvalidUriTemplate(f"more than one variable spans segments ({', '.join(spanning)}); matching "
                                 "would be ambiguous", template=template)
    for before, part in zip(path, path[1:]):
        if isinstance(before, str) or isinstance(part, str):
            continue
        operator, variables = part
        if not _SPEC[operator][0] or variables[0].explode:
            raise InvalidUriTemplate(f"variables {before[1][-1].name!r} and {variables[0].name!r} are adjacent with "
                                     "no literal between them; add one, or use a single variable", template=template)


def _expression_pattern(operator: str, variables: list[Variable], groups: dict[str, Variable]) -> str:
    """The regular expression of one expression; its variables become named groups. Every variable
    must be present, as ``expand`` writes it; a value may be empty."""
    first, separator, _ = _SPEC[operator]
    pattern = ""
    for index, variable in enumerate(variables):
        group = f"v{len(groups)}"
        groups[group] = variable
        lead = re.escape(first if index == 0 else separator)
        value = _VALUE[operator]
        name = re.escape(variable.name)
        if variable.explode:
            item = f"{name}(?:={value}*)?" if operator == ";" else f"{value}*"
            pattern += f"(?P<{group}>(?:{re.escape(first)}{item})*)"
        elif operator == ";":
            pattern += f"{lead}{name}(?:=(?P<{group}>{value}*))?"
        elif operator in ("?", "&"):
            pattern += f"{lead}{name}=(?P<{group}>{value}*)"
        else:
            pattern += f"{lead}(?P<{group}>{value}*)"
    return pattern


__all__ = [
    "DEFAULT_MAX_TEMPLATE_LENGTH",
    "DEFAULT_MAX_URI_LENGTH",
    "DEFAULT_MAX_VARIABLES",
    "InvalidUriTemplate",
    "Operator",
    "UriTemplate",
    "Variable",
]
