"""The decorator tier: ``MCPServer``, which turns plain functions into the handlers of a core ``Server``.

Rule: this package reads signatures, builds schemas, keeps registries and converts return values;
it speaks no wire format and does no I/O. It answers the core's ``Planner`` port (``planner``)
and registers its handlers; the edges reach it only through the core, except the convenience
methods that start a transport (``run``, ``wsgi_app``, ``in_memory_endpoint``).

- ``server``: ``MCPServer``; ``planner``: what a request is, from the registries;
- ``tools``, ``resources``, ``prompts``, ``signature``, ``resolve``, ``visibility``, ``media``,
  ``generated``: the components and how a call reaches them;
- ``context``, ``elicitation``, ``exceptions``: what a tool sees, the answers it gets, what it raises;
- ``extension``, ``apps``, ``middleware``, ``subscriptions``, ``tasks``, ``openapi``: the features
  built on the tier (the OpenTelemetry middleware is the core's, ``core.otel``).
"""
