"""The version of minimcp, in one place: ``minimcp.__version__`` reads it, and so does the build
(setup.cfg's ``version = attr:``) without importing the package."""

__version__ = "0.1.0"
