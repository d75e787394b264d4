"""``MemoryBackend``: everything in this process, as minimcp has always kept it (the default).

The public path; the code lives in ``minimcp.server.core.in_process``, since the core builds it
for a server given no backend."""

from minimcp.server.core.in_process import MemoryBackend

__all__ = ["MemoryBackend"]
