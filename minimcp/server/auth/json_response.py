"""JSON answers of the authorization endpoints: pydantic models dumped without their unset fields."""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel
from werkzeug.wrappers import Response

#: RFC 6749 §5.1: a response carrying tokens or credentials must not be cached.
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}


def json_response(content: BaseModel | dict[str, Any], status: int = 200,
                  headers: dict[str, str] | None = None) -> Response:
    body = (content.model_dump_json(exclude_none=True) if isinstance(content, BaseModel)
            else json.dumps({key: value for key, value in content.items() if value is not None}))
    return Response(body, status=status, headers=headers, content_type="application/json")
