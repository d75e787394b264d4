"""Settings of the example library project. ``LIBRARY_DATABASE`` lets the tests run it on a
database of their own; ``LIBRARY_THROTTLE`` sets the reviews API's per-user rate and
``LIBRARY_MCP_AUTH`` the DRF authentication classes the MCP endpoint accepts."""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]

INSTALLED_APPS = [
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "rest_framework",
    "rest_framework.authtoken",
    "minimcp.django",
    "library",
]
MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
]
ROOT_URLCONF = "librarysite.urls"
DATABASES = {"default": {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": os.environ.get("LIBRARY_DATABASE", BASE_DIR / "db.sqlite3"),
}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
USE_TZ = True

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["rest_framework.authentication.TokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.DjangoModelPermissions"],
    "DEFAULT_THROTTLE_RATES": {"reviews": os.environ.get("LIBRARY_THROTTLE", "100/minute")},
}

# The MCP endpoint also accepts what DRF's DEFAULT_AUTHENTICATION_CLASSES accept (Authorization:
# Token ...); LIBRARY_MCP_AUTH names other classes instead (comma-separated paths).
MINIMCP = {"NAME": "Library", "MAX_WORKERS": 4,
           "DRF_AUTHENTICATION": os.environ["LIBRARY_MCP_AUTH"].split(",") if os.environ.get("LIBRARY_MCP_AUTH") else True}
