"""What can go wrong while a client obtains a token; messages never carry a secret."""


class OAuthFlowError(Exception):
    """The authorization flow cannot go on: bad metadata, a refused redirect, a server that will not say yes."""


class OAuthTokenError(OAuthFlowError):
    """The token endpoint refused, or answered something that is not a token."""


class OAuthRegistrationError(OAuthFlowError):
    """Dynamic client registration failed or returned a client this flow cannot use."""


__all__ = ["OAuthFlowError", "OAuthRegistrationError", "OAuthTokenError"]
