"""The edges: where messages arrive as bytes and leave as bytes.

Rule: an edge turns its transport's input into the core's calls and the core's answers back into
output, and holds no protocol rule of its own. ``http`` is Streamable HTTP without I/O; ``wsgi``,
``stdio`` and ``memory`` are the adapters around it and the core; ``runner`` is where a server
meets them (``Server.run()``, ``wsgi_app()``).
"""
