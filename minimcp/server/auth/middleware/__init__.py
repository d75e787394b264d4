"""The bearer check at the HTTP edge, client authentication, and the current request's token."""
