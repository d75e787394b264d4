"""Mount the MCP endpoint beside a Django project, at ``/mcp``: a single-file Django project.

Run it with ``python examples/django_mount.py``: Django answers ``http://127.0.0.1:8000/`` and MCP
clients connect to ``http://127.0.0.1:8000/mcp``. In a real project the last lines belong in
``wsgi.py``; serve ``application`` with any threaded WSGI server (``gunicorn --worker-class gthread
--threads 8 django_mount:application``).

Mounted beside Django this way, tool bodies run on minimcp's worker threads outside Django's
request cycle: a database connection opened there belongs to that thread, so close it when the
tool is done (``django.db.close_old_connections()``). To run tools inside the project instead (its
middleware, its users and permissions, its connection rules), install the ``minimcp.django`` app:
see ``django_notes/``.
"""

from django.conf import settings

if not settings.configured:
    settings.configure(
        DEBUG=False,
        SECRET_KEY="example-only-not-secret",
        ROOT_URLCONF=__name__,
        ALLOWED_HOSTS=["127.0.0.1", "localhost", "[::1]"],
        MIDDLEWARE=[],
        INSTALLED_APPS=[],
        DATABASES={},
    )

from django.core.wsgi import get_wsgi_application  # noqa: E402  (after settings.configure)
from django.http import HttpRequest, HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402
from werkzeug.middleware.dispatcher import DispatcherMiddleware  # noqa: E402

from minimcp.server import MCPServer  # noqa: E402

mcp = MCPServer("Django host")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def index(request: HttpRequest) -> HttpResponse:
    return HttpResponse("Hello from Django", content_type="text/plain")


urlpatterns = [path("", index)]

application = DispatcherMiddleware(get_wsgi_application(), {"/mcp": mcp.wsgi_app(streamable_http_path="/")})


if __name__ == "__main__":
    from werkzeug.serving import run_simple

    run_simple("127.0.0.1", 8000, application, threaded=True)
