"""Mount the MCP endpoint inside a Flask application, at ``/mcp``, beside Flask's own routes.

Run it with ``python examples/flask_mount.py``: Flask answers ``http://127.0.0.1:8000/`` and MCP clients
connect to ``http://127.0.0.1:8000/mcp``. Any WSGI server works (``gunicorn --worker-class gthread
--threads 8 flask_mount:app``); threaded workers are needed for legacy server-to-client requests.

Mounted beside Flask this way, tool bodies run on minimcp's worker threads outside any Flask
context, so a tool pushes one itself (``with app.app_context(): ...``). To run tools inside the
application instead (its contexts, its login, its users), use ``minimcp.flask.MCP(app)``: see
``flask_notes.py``.
"""

from flask import Flask
from werkzeug.middleware.dispatcher import DispatcherMiddleware

from minimcp.server import MCPServer

mcp = MCPServer("Flask host")


@mcp.tool()
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@mcp.tool()
def app_name() -> str:
    """The Flask application's name, read inside an app context pushed on the worker thread."""
    from flask import current_app

    with app.app_context():
        return current_app.name


app = Flask(__name__)


@app.route("/")
def index() -> str:
    return "Hello from Flask"


# The endpoint matches PATH_INFO against streamable_http_path; under the /mount prefix that is "/".
app.wsgi_app = DispatcherMiddleware(app.wsgi_app, {"/mcp": mcp.wsgi_app(streamable_http_path="/")})  # type: ignore[method-assign]


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=8000, threaded=True)
