"""How a refused authorization request explains itself."""

from __future__ import annotations

from pydantic import ValidationError


def stringify_pydantic_error(validation_error: ValidationError) -> str:
    """One line per problem, ``field: message``: what an ``error_description`` says about bad input."""
    return "\n".join(f"{'.'.join(str(part) for part in error['loc'])}: {error['msg']}"
                     for error in validation_error.errors())
