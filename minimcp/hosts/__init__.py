"""minimcp inside a web application: what ``minimcp.flask`` and ``minimcp.django`` share.

The rule of this package: it knows no web framework. A host module adapts it to its own request,
response and user objects; what HTTP answers is the sans-I/O exchange's
(``minimcp.server.edges.http``), which a host view calls with the request it already has,
never by building a WSGI environ of its own.

- ``hosted``: ``HostedServer`` (per-user tool access, the endpoint a view hands requests to, the
  caller's stable key, the refusals a host answers itself: 401, a Host not its own, a foreign
  Origin, a body too large, a user it cannot name);
- ``site_auth``: the site as its own authorization server (``oauth=True``);
- ``api_tokens``: what both hosts issue and show of a user's API token.
"""
