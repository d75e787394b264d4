"""Tools: a plain function, its schemas, and the conversion of what it returns into a result.

The public path; the code lives in ``minimcp.server.app.tools``."""

from minimcp.server.app.tools import (
    as_listed,
    error_result,
    failure_result,
    output_plan,
    task_support,
    TaskSupport,
    text_result,
    to_content,
    Tool,
)

__all__ = ["as_listed", "error_result", "failure_result", "output_plan", "task_support", "TaskSupport", "text_result", "to_content", "Tool"]
