"""Pieces both sides of a connection share.

Rule: nothing here imports ``minimcp.server`` or ``minimcp.client``; both build on this package,
never the other way round. What is here is protocol (header codecs, the 2026 envelope ladder,
extension identifiers, URI templates, trace context), not I/O.
"""
