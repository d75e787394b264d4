"""The API reference's directives: ``minimcp-modules`` documents modules by their public names and
``minimcp-command-help`` prints the command line's help, both generated at build time.

A name is public when its module's ``__all__`` lists it (a module without ``__all__``: the classes
and functions it defines). Many names are exported from several import paths (``MCPServer`` from
``minimcp.server`` and ``minimcp.server.mcpserver``), and an object described twice is a duplicate
for Sphinx, so each object is described once, at its home: the first module that exports it, in
the order the reference pages list them (``minimcp_reference_pages`` in conf.py, then the order of
the modules in each page). Every other module that exports it gets an entry with the same anchor
as a description would have (``minimcp.server.MCPServer``) that links to the home.

A name's home on the site need not be where its code is: ``minimcp.types`` names the models and
constants its topic modules define. What autodoc reads from a module's source (a constant's ``#:``
comment, its annotation) is read from the module that assigns the name, and a name in an
annotation links to where the site describes what it names.
"""

from __future__ import annotations

import argparse
import ast
import builtins
import contextlib
import functools
import importlib
import inspect
import logging
import os
import re
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar

from docutils import nodes
from docutils.statemachine import StringList
from pydantic import BaseModel
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError, PycodeError
from sphinx.pycode import ModuleAnalyzer
from sphinx.util.docstrings import prepare_docstring
from sphinx.util.docutils import SphinxDirective

#: A ``minimcp-modules`` block of a page written in MyST: the directive's line, then one module a line.
_BLOCK = re.compile(r"^\.\. minimcp-modules::\n((?:[ \t]*\n|[ \t]+\S.*\n)*)", re.MULTILINE)


def referenced_modules(docs: Path, pages: list[str]) -> list[str]:
    """The modules the reference pages document, in the order of the pages and of their blocks."""
    listed = {str(path.relative_to(docs).with_suffix("")) for path in (docs / "reference").glob("*.md")}
    if missing := listed - set(pages):
        raise ExtensionError(f"reference pages not in minimcp_reference_pages: {sorted(missing)}")
    modules: list[str] = []
    for page in pages:
        for block in _BLOCK.findall((docs / page).with_suffix(".md").read_text()):
            modules.extend(block.split())
    return modules


def public_names(module: ModuleType) -> list[str]:
    """``__all__``, or else what the module's source defines at its top level (classes, functions,
    constants, type aliases) under a name without a leading underscore, but for its type variables
    and its logger."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    defined: list[str] = []
    for statement in ast.parse(inspect.getsource(module)).body:
        if isinstance(statement, (ast.ClassDef, ast.FunctionDef)):
            defined.append(statement.name)
        elif isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            defined.extend(target.id for target in targets if isinstance(target, ast.Name))
    return [name for name in dict.fromkeys(defined) if not name.startswith("_")
            and not isinstance(getattr(module, name), (TypeVar, logging.Logger))]


@functools.cache
def _statements(module_name: str) -> list[ast.stmt]:
    """The top-level statements of a module's source (none for a module without one)."""
    try:
        return ast.parse(inspect.getsource(importlib.import_module(module_name))).body
    except (OSError, TypeError):
        return []


def defining_module(module_name: str, name: str) -> tuple[str, str] | None:
    """The module whose source assigns what ``module_name`` calls ``name``, and the name it has there,
    following the ``from ... import`` statements that re-export it; ``None`` when neither is found
    (a name made by a function, or served by a module ``__getattr__``)."""
    for statement in _statements(module_name):
        if isinstance(statement, ast.Assign):
            if any(isinstance(target, ast.Name) and target.id == name for target in statement.targets):
                return module_name, name
        elif isinstance(statement, ast.AnnAssign):
            if isinstance(statement.target, ast.Name) and statement.target.id == name:
                return module_name, name
        elif isinstance(statement, ast.ImportFrom) and statement.module and not statement.level:
            for alias in statement.names:
                if (alias.asname or alias.name) == name:
                    return defining_module(statement.module, alias.name)
    return None


def _identity(name: str, value: Any) -> Any:
    """What makes two exports the same object: the object itself (``SamplingRole`` is ``Role``),
    but for a number or a string, which the interpreter may share between unrelated constants."""
    if isinstance(value, (str, bytes, int, float, tuple, frozenset)) or value is None:
        return name, id(value)
    return id(value)


def homes(modules: list[str]) -> dict[Any, str]:
    """Each public object's home: its full name in the first of ``modules`` that exports it (a
    function may be exported under another name than the one it has at home)."""
    found: dict[Any, str] = {}
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in public_names(module):
            found.setdefault(_identity(name, getattr(module, name)), f"{module_name}.{name}")
    return found


def _described_as_data(value: Any) -> bool:
    """Whether ``_describe`` makes ``value`` an ``autodata``: what is not minimcp's class, a
    function or a module (a constant, a type alias, another library's class as an alias)."""
    return not (inspect.ismodule(value) or inspect.isroutine(value)
                or (inspect.isclass(value) and value.__module__.startswith("minimcp")))


def carry_annotations(modules: list[str]) -> None:
    """Give each of ``modules`` the annotation of every constant it re-exports (``RequestId:
    TypeAlias``), from the module that assigns it: autodoc reads a constant's annotation from the
    module it is documented at. Changes only the ``__annotations__`` of the modules documented, in
    the process that builds the site."""
    for module_name in modules:
        module = importlib.import_module(module_name)
        for name in public_names(module):
            if not _described_as_data(getattr(module, name)):
                continue
            found = defining_module(module_name, name)
            if found is None or found[0] == module_name:
                continue
            home = importlib.import_module(found[0])
            annotation = vars(home).get("__annotations__", {}).get(found[1])
            if annotation is None:
                continue
            if isinstance(annotation, str):  # written under ``from __future__ import annotations``
                with contextlib.suppress(Exception):
                    annotation = eval(annotation, vars(home))  # the package's own source, as typing would
            module.__annotations__.setdefault(name, annotation)


def _describe(module: str, name: str, value: Any) -> list[str]:
    """The autodoc directive for ``module.name``: a class of another library (``Cursor = str``) is
    an alias, described as data. A pydantic model is its fields (pydantic's own signature for it
    leaves out the fields it takes by their wire alias), and the models it extends."""
    if inspect.ismodule(value):
        return []
    if inspect.isclass(value) and value.__module__.startswith("minimcp"):
        if issubclass(value, BaseModel):
            return [f".. autoclass:: {module}.{name}(**fields)", "   :members:", "   :undoc-members:",
                    "   :show-inheritance:", ""]
        kind = "autoexception" if issubclass(value, BaseException) else "autoclass"
        return [f".. {kind}:: {module}.{name}", "   :members:", ""]
    if inspect.isroutine(value):
        return [f".. autofunction:: {module}.{name}", ""]
    return [f".. autodata:: {module}.{name}", ""]


class ModulesDirective(SphinxDirective):
    """A section for each module of the content (one a line): its docstring, a description of each
    public name it is the home of, and a list of the names it re-exports."""

    has_content = True

    def run(self) -> list[nodes.Node]:
        found: dict[Any, str] = self.env.app.minimcp_homes  # type: ignore[attr-defined]
        result: list[nodes.Node] = []
        for module_name in self.content:
            module = importlib.import_module(module_name.strip())
            own: list[str] = [f".. automodule:: {module.__name__}", ""]
            elsewhere: list[tuple[str, str, Any]] = []
            for name in public_names(module):
                value = getattr(module, name)
                home = found[_identity(name, value)]
                if home == f"{module.__name__}.{name}" and not inspect.ismodule(value):
                    own.extend(_describe(module.__name__, name, value))
                else:
                    elsewhere.append((name, home, value))
            section = nodes.section(ids=[nodes.make_id(f"reference {module.__name__}")], names=[module.__name__])
            section += nodes.title(module.__name__, "", nodes.literal(module.__name__, module.__name__))
            self.state.nested_parse(StringList(own, self.get_source_info()[0]), self.content_offset, section)
            if elsewhere:
                section += self._reexports(module.__name__, elsewhere)
            result.append(section)
        return result

    def _reexports(self, module: str, names: list[tuple[str, str, Any]]) -> nodes.Node:
        listing = nodes.bullet_list(classes=["minimcp-reexports"])
        for name, home, value in names:
            target = value.__name__ if inspect.ismodule(value) else home
            link = addnodes.pending_xref("", nodes.literal(name, name), refdomain="py",
                                         reftype="mod" if inspect.ismodule(value) else "obj",
                                         reftarget=target, refexplicit=True, refwarn=True)
            item = nodes.list_item(ids=[f"{module}.{name}"])
            item += nodes.paragraph("", "", link, nodes.Text(f": {target}"))
            listing += item
        container = nodes.container()
        container += nodes.rubric(text="Re-exported here")
        container += listing
        return container


class CommandHelpDirective(SphinxDirective):
    """The help of the parser a function builds (the argument) and of each of its subcommands."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        module_name, _, function = self.arguments[0].rpartition(".")
        parser: argparse.ArgumentParser = getattr(importlib.import_module(module_name), function)()
        parsers = [parser]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                parsers.extend(dict.fromkeys(action.choices.values()))  # aliases map to the same parser
        previous = os.environ.get("COLUMNS")
        os.environ["COLUMNS"] = "100"  # argparse wraps at the terminal's width: the page's is fixed
        try:
            texts = [each.format_help() for each in parsers]
        finally:
            if previous is None:
                del os.environ["COLUMNS"]
            else:
                os.environ["COLUMNS"] = previous
        return [nodes.literal_block(text, text, language="text", classes=["minimcp-help"]) for text in texts]


def _borrowed(what: str, obj: Any) -> str | None:
    """The docstring autodoc would show for ``obj`` that is not about it: a constant's or an
    alias's type's (pydantic's ``TypeAdapter``, ``str``), or the one a method inherits from
    another library's class (``requests``'), written for that library's site and its labels."""
    if what == "data":
        return getattr(obj, "__doc__", None)  # a constant's type's, an alias's origin's
    if what == "method" and inspect.isfunction(obj) and obj.__doc__ is None:
        owner: Any = importlib.import_module(obj.__module__)
        for part in obj.__qualname__.split(".")[:-1]:
            owner = getattr(owner, part, None)
        for base in inspect.getmro(owner) if inspect.isclass(owner) else ():
            inherited = vars(base).get(obj.__name__)
            if getattr(inherited, "__doc__", None):
                return None if base.__module__.startswith("minimcp.") else inherited.__doc__
    return None


def _comment_where_assigned(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """A re-exported constant's ``#:`` comment, from the module that assigns it: autodoc looks for
    it only in the module the constant is documented at."""
    if what != "data":
        return
    module_name, _, short = name.rpartition(".")
    found = defining_module(module_name, short)
    if found is None or found[0] == module_name:
        return
    try:
        analyzer = ModuleAnalyzer.for_module(found[0])
        analyzer.analyze()
    except PycodeError:
        return
    comment = analyzer.attr_docs.get(("", found[1]))
    if comment:
        lines[:] = list(comment)


def _no_borrowed_docstring(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    borrowed = _borrowed(what, obj)
    if borrowed and lines[:-1] == prepare_docstring(borrowed)[:-1]:
        lines.clear()


def _no_protocol_signature(app: Sphinx, what: str, name: str, obj: Any, options: Any, signature: str | None,
                           return_annotation: str | None) -> tuple[str, str | None] | None:
    """A class without a constructor of its own under a ``Protocol`` shows ``typing``'s placeholder
    ``(*args, **kwargs)``, which takes nothing the class does: no signature instead."""
    init = getattr(obj, "__init__", None)
    if what in ("class", "exception") and getattr(init, "__module__", None) == "typing":
        return "", return_annotation
    return None


def _skip_pydantic_config(app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any) -> bool | None:
    """A model's ``model_config`` is pydantic's settings for it, not something to call or read."""
    return True if what == "class" and name == "model_config" else None


def _unlink_builtins(app: Sphinx, doctree: nodes.document) -> None:
    """A builtin in an annotation (``type[BaseModel]``) names nothing the site describes, but Sphinx
    looks an annotation's name up by its last part too, and finds every model's ``type`` field."""
    for xref in list(doctree.findall(addnodes.pending_xref)):
        if xref.get("refdomain") == "py" and xref.get("reftarget") in vars(builtins):
            xref.replace_self(xref.children)


@functools.cache
def _names_in(module_name: str) -> dict[str, str]:
    """The full name of each class and function a module's code can call by a bare name: its
    globals, and what it imports for annotations only (``if TYPE_CHECKING:``)."""
    module = importlib.import_module(module_name)
    names = {statement_alias.asname or statement_alias.name: f"{statement.module}.{statement_alias.name}"
             for statement in ast.walk(ast.parse(inspect.getsource(module)))
             if isinstance(statement, ast.ImportFrom) and statement.module and not statement.level
             for statement_alias in statement.names}
    names.update({name: f"{value.__module__}.{value.__qualname__}" for name, value in vars(module).items()
                  if inspect.isclass(value) or inspect.isfunction(value)})
    return names


def _object_at(full_name: str) -> Any:
    """The object ``full_name`` (a module's, or a class's within it) names; ``None`` if none."""
    module_name, attributes = full_name, ""
    while module_name:
        try:
            found: Any = importlib.import_module(module_name)
        except ImportError:
            module_name, _, last = module_name.rpartition(".")
            attributes = f"{last}.{attributes}" if attributes else last
            continue
        for attribute in attributes.split(".") if attributes else ():
            found = getattr(found, attribute, None)
        return found
    return None


def _where_described(full_name: str, found: dict[Any, str]) -> str:
    """Where the site describes what ``full_name`` names (``minimcp.types.base.Meta`` is described
    as ``minimcp.types.Meta``); ``full_name`` itself when it is described nowhere."""
    value = _object_at(full_name)
    if value is None:
        return full_name
    return found.get(_identity(full_name.rpartition(".")[2], value), full_name)


def _qualify_annotations(app: Sphinx, doctree: nodes.document) -> None:
    """A signature's annotation is left as its source wrote it (``list[Tool]``) when the module
    imports a name of it for type checking only; Sphinx then links ``Tool`` to whichever object of
    the site ends in ``.Tool`` (``minimcp.types.Tool`` or the server's ``Tool``). The name means
    what it means in the module that defines the described object, and links to where the site
    describes that."""
    found: dict[Any, str] = app.minimcp_homes  # type: ignore[attr-defined]
    for signature in doctree.findall(addnodes.desc_signature):
        module_name, fullname = signature.get("module"), signature.get("fullname")
        if not module_name or not fullname:
            continue
        described = getattr(importlib.import_module(module_name), fullname.split(".")[0], None)
        defined_in = getattr(described, "__module__", None)
        if not isinstance(defined_in, str) or not defined_in.startswith("minimcp"):
            continue
        for xref in signature.findall(addnodes.pending_xref):
            target = xref.get("reftarget", "")
            if "." not in target and target in _names_in(defined_in):
                xref["reftarget"] = _where_described(_names_in(defined_in)[target], found)


def _find_homes(app: Sphinx) -> None:
    modules = referenced_modules(Path(app.srcdir), app.config.minimcp_reference_pages)
    app.minimcp_homes = homes(modules)  # type: ignore[attr-defined]
    carry_annotations(modules)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_config_value("minimcp_reference_pages", [], "env")
    app.add_directive("minimcp-modules", ModulesDirective)
    app.add_directive("minimcp-command-help", CommandHelpDirective)
    app.connect("builder-inited", _find_homes)
    app.connect("autodoc-process-docstring", _comment_where_assigned)
    app.connect("autodoc-process-docstring", _no_borrowed_docstring)
    app.connect("autodoc-process-signature", _no_protocol_signature)
    app.connect("autodoc-skip-member", _skip_pydantic_config)
    app.connect("doctree-read", _unlink_builtins)
    app.connect("doctree-read", _qualify_annotations)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
