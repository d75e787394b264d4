"""An MCP endpoint as a route of a Flask app: tools run inside the app's context."""

from flask import Flask, current_app

from minimcp.flask import MCP

app = Flask(__name__)
mcp = MCP(app, name="Greeter")  # serves /mcp


@app.get("/")
def home() -> str:
    return "The site's own pages keep working."


@mcp.tool()
def greet(name: str) -> str:
    """Greet someone, from inside the Flask app."""
    return f"Hello, {name}, from {current_app.name}!"


if __name__ == "__main__":
    app.run(threaded=True)  # http://127.0.0.1:5000/mcp
