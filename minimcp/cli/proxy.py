"""``minimcp proxy TARGET``: serve any server, over stdio or HTTP, as a server of this process.

What a stdio-only host needs to reach a remote server: the host starts ``minimcp proxy URL`` as
its stdio server, and the proxy speaks Streamable HTTP to the URL, signing in through the browser
when the server asks for OAuth (``--token`` or ``--header`` give credentials instead). A command
after ``--`` or a server file is proxied alike, and ``--http`` serves the proxy over HTTP instead.
"""

from __future__ import annotations

import os
from argparse import Namespace
from collections.abc import Hashable
from contextlib import ExitStack
from typing import Any

from minimcp.cli.errors import CLIError
from minimcp.cli.serve import serve
from minimcp.cli.target import Target, load_server
from minimcp.client.auth.browser import browser_login
from minimcp.client.client import Client
from minimcp.client.stdio import StdioServerParameters
from minimcp.server.app.proxy import ProxyConfigError, UpstreamSpec, create_proxy
from minimcp.server.app.proxy.config import is_configuration


def upstream_of(target: Target) -> Any:
    """What the proxy is put in front of: the URL, the command (with the caller's environment, as
    a shell would start it), or the file's server object."""
    if target.url is not None:
        return target.url
    if target.command:
        return StdioServerParameters(command=target.command[0], args=list(target.command[1:]), env=dict(os.environ))
    assert target.file is not None
    if target.file.suffix == ".json":
        return target.file  # an mcpServers configuration
    return load_server(target)


def proxy(target: Target, options: Namespace, headers: dict[str, str]) -> int:
    with ExitStack() as stack:
        factory: dict[str, Any] = {}
        if target.url is not None and not any(name.lower() == "authorization" for name in headers):
            auth = browser_login(target.url)  # acts only when the server answers 401
            stack.callback(auth.close)

            def signed_in(spec: UpstreamSpec, key: Hashable, client_options: dict[str, Any]) -> Client:
                return Client(spec.target, auth=auth, **client_options)

            factory["connection_factory"] = signed_in
        upstream = upstream_of(target)
        try:
            if is_configuration(upstream):
                if options.era != "auto" or options.timeout is not None:
                    raise CLIError("a configuration says mode and timeout per entry, in its mcpServers")
                server = create_proxy(upstream, **factory)
            else:
                server = create_proxy(upstream, mode=options.era, headers=headers or None, timeout=options.timeout,
                                      **factory)
        except ProxyConfigError as wrong:
            raise CLIError(str(wrong)) from None
        stack.callback(server.close)
        return serve(server, options)
