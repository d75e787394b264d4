"""Checking a tool's structured content against its output schema, with the schema checked once.

``jsonschema.validate`` checks the schema itself against its meta-schema on every call, which
costs more than the rest of a ``call_tool``. A tool's schema only changes when the tool is listed
again, so the validator built for one schema object is kept and reused while that object is the
tool's. Without ``jsonschema`` installed nothing is checked (it is not a dependency of minimcp).
"""

from __future__ import annotations

import logging
import threading
from typing import Any

logger = logging.getLogger("minimcp.client")


class OutputValidator:
    """One output schema, compiled; :meth:`problem` names what is wrong with an instance."""

    def __init__(self, name: str, schema: dict[str, Any]) -> None:
        self.schema = schema
        self._validator: Any = None
        try:
            import jsonschema
        except ImportError:
            return
        cls = jsonschema.validators.validator_for(schema)
        try:
            cls.check_schema(schema)
        except jsonschema.SchemaError:
            logger.warning("Tool %r declares an output schema that is not valid JSON Schema", name)
            return
        self._validator = cls(schema)

    def problem(self, instance: Any) -> str | None:
        """The message of the most relevant error, or ``None`` when ``instance`` fits."""
        if self._validator is None:
            return None
        import jsonschema

        error = jsonschema.exceptions.best_match(self._validator.iter_errors(instance))
        return None if error is None else error.message


# Guards _validators (tool name -> the validator of the schema object last seen for it).
_lock = threading.Lock()
_validators: dict[str, OutputValidator] = {}


def output_validator(name: str, schema: dict[str, Any]) -> OutputValidator:
    """The validator for ``schema``, built once per schema object (a relisted tool gets a new one)."""
    with _lock:
        known = _validators.get(name)
    if known is not None and known.schema is schema:
        return known
    made = OutputValidator(name, schema)
    with _lock:
        _validators[name] = made
    return made
