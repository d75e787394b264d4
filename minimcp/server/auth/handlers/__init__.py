"""The HTTP endpoints of the authorization tier, each a plain ``def handle(request) -> Response``."""
