"""Pieces both sides of a connection share."""
