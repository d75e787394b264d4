"""``examples/oauth_server.py``'s server on a port the system picks: ``python oauth_example.py``.

The example's server must know its own URL (the issuer, and the resource its tokens are for) before it
serves, and the example takes its port as an argument; a test that picked a free port and handed it over
would race any other process for it. So this binds first, builds the example's server for the URL it got,
and announces that URL on stdout once it listens.
"""

import sys
from pathlib import Path
from typing import Any, Callable, Iterable

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))

from oauth_server import build_server  # noqa: E402

from minimcp.httpd import WSGIServer  # noqa: E402


def serve_app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    return app(environ, start_response)


httpd = WSGIServer(serve_app, "127.0.0.1", 0)
base = f"http://127.0.0.1:{httpd.port}"
app = build_server(base).wsgi_app()
print(f"serving {base}/mcp", flush=True)
httpd.run()
