"""Run the export (export_task.py, served) as a task, and the same call awaited; the user's answer
to its question comes from ``ask``. Another server's URL may be given as the first argument."""

import sys
from typing import Any

from minimcp import Client
from minimcp.types import ElicitResult

url = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8000/mcp"


def ask(context: Any, params: Any) -> ElicitResult:
    """What the user answers to the export's question."""
    print("asked:", params.message)
    return ElicitResult(action="accept", content={"ok": True})


with Client(url, elicitation_callback=ask) as client:
    job = client.call_tool("export", {"table": "orders"}, task=True)   # a TaskHandle
    job.status().status                 # "working", one poll
    print(job.result(timeout=600).content)   # blocks, answering questions through ask()
    client.call_tool("export", {"table": "orders"})   # the same, awaited behind call_tool
    later = client.task(job.task_id)    # a handle from the id alone: another connection, after a restart
    print(later.status().status)
