"""URL-mode elicitation end to end: a deposit tool, its payment page, and a client that waits for it.

The seed's ``pay_deposit`` sends the user to ``https://pay.example.com``; here the "payment provider"
is a page served by the same process, so the whole flow runs on one machine:

1. the client calls ``pay_deposit("42")``; the tool asks the user (URL mode) to open
   ``http://127.0.0.1:8000/pay?booking=42`` and remembers which session asked;
2. the user agrees; the tool returns "Complete the payment in your browser.";
3. the user presses "Pay" on the page; the page's POST handler sends
   ``notifications/elicitation/complete`` for ``deposit-42`` to the session that asked;
4. the client, still connected, sees the notification on its standalone GET stream and prints
   "payment completed".

Run ``python examples/payment_page.py`` (the server), then, in a second terminal,
``python examples/payment_page.py client`` (asks on the terminal and opens the browser).

A real provider would authenticate whoever opens the page and bind the payment to that user
(protocol.md §4.3); this demo trusts anyone who can reach 127.0.0.1.
"""

from __future__ import annotations

import html
import sys
import threading
from typing import Any
from urllib.parse import urlencode

from werkzeug import Request, Response

from minimcp.server import MCPServer
from minimcp.server.mcpserver import Context
from minimcp.server.lowlevel.sessions import ServerSession

mcp = MCPServer("Bistro")

FALLBACK_BASE = "http://127.0.0.1:8000/"  # where the page lives when the call did not come over HTTP

# elicitation id -> the legacy session that asked; the page answers exactly that client.
# The lock guards the dict: tools run on worker threads, the page on the HTTP server's request threads.
_waiting: dict[str, ServerSession] = {}
_waiting_lock = threading.Lock()


def elicitation_id_for(booking_id: str) -> str:
    return f"deposit-{booking_id}"


def page_url(ctx: Context, booking_id: str) -> str:
    """The payment page on the host and port the client reached us on, so any ``--port`` works."""
    request = ctx.request_context.request
    base = request.host_url if request is not None else FALLBACK_BASE
    return f"{base}pay?{urlencode({'booking': booking_id})}"


@mcp.tool()
def pay_deposit(booking_id: str, ctx: Context) -> str:
    """Take the deposit that confirms a booking."""
    elicitation_id = elicitation_id_for(booking_id)
    with _waiting_lock:  # before asking: the page may be submitted before the tool resumes
        _waiting[elicitation_id] = ctx.session
    result = ctx.elicit_url(
        message="A 20 EUR deposit confirms your booking.",
        url=page_url(ctx, booking_id),
        elicitation_id=elicitation_id,
    )
    if result.action == "accept":
        return "Complete the payment in your browser."
    with _waiting_lock:
        _waiting.pop(elicitation_id, None)
    return "No deposit taken. The booking expires in one hour."


_PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title></head>
<body{onload}>
<h1>{title}</h1>
{body}
</body></html>
"""


def _html(title: str, body: str, status: int = 200, onload: str = "") -> Response:
    page = _PAGE.format(title=html.escape(title), body=body, onload=onload)
    return Response(page, status=status, mimetype="text/html")


@mcp.custom_route("/pay", methods=["GET", "POST"])
def payment_page(request: Request) -> Response:
    """GET shows the deposit form; POST "pays" and tells the waiting client its URL step is done.

    ``?autosubmit=1`` submits the form as soon as the page loads, which lets a headless browser
    run the whole flow without scripting clicks.
    """
    booking_id = request.args.get("booking", "")
    if not booking_id:
        return _html("No booking", "<p>This link names no booking.</p>", status=400)
    shown = html.escape(booking_id)
    if request.method == "GET":
        action = html.escape(f"/pay?{urlencode({'booking': booking_id})}", quote=True)
        onload = ' onload="document.forms[0].submit()"' if request.args.get("autosubmit") == "1" else ""
        form = (f'<p>Deposit for booking {shown}: <strong>20 EUR</strong></p>\n'
                f'<form method="post" action="{action}"><button type="submit">Pay 20 EUR</button></form>')
        return _html(f"Bistro deposit, booking {shown}", form, onload=onload)
    with _waiting_lock:
        session = _waiting.pop(elicitation_id_for(booking_id), None)
    if session is None:
        return _html("Nothing to pay", f"<p>No deposit is waiting for booking {shown}.</p>", status=404)
    session.send_elicit_complete(elicitation_id_for(booking_id))
    return _html("Payment received", f"<p>Payment received for booking {shown}. You can close this tab.</p>")


# --- the client -----------------------------------------------------------------------------------
def pay(url: str, booking_id: str, elicitation_callback: Any, timeout: float = 600.0) -> bool:
    """Call ``pay_deposit`` over legacy Streamable HTTP and wait (bounded) for the page's signal.

    Returns True once ``notifications/elicitation/complete`` arrived for this booking; prints
    "payment completed" then. The connection stays open while waiting because the notification
    travels on the session's standalone GET stream.
    """
    from minimcp import Client
    from minimcp.types import ElicitCompleteNotification, TextContent

    expected = elicitation_id_for(booking_id)
    completed = threading.Event()

    def on_message(message: Any) -> None:
        if isinstance(message, ElicitCompleteNotification) and message.params.elicitation_id == expected:
            completed.set()

    with Client(url, mode="legacy", elicitation_callback=elicitation_callback, message_handler=on_message) as client:
        result = client.call_tool("pay_deposit", {"booking_id": booking_id})
        first = result.content[0]
        text = first.text if isinstance(first, TextContent) else str(first)
        print(text)
        if result.is_error or text != "Complete the payment in your browser.":
            return False
        if not completed.wait(timeout):
            print(f"no payment within {timeout:.0f}s")
            return False
    print("payment completed")
    return True


def main(argv: list[str]) -> None:
    if argv[:1] == ["client"]:
        from minimcp.client.terminal import TerminalElicitation

        url = argv[1] if len(argv) > 1 else "http://127.0.0.1:8000/mcp"
        sys.exit(0 if pay(url, "42", TerminalElicitation(open_browser=True)) else 1)
    mcp.run(transport="streamable-http")


if __name__ == "__main__":
    main(sys.argv[1:])
