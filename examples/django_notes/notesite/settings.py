"""Settings of the example project. ``NOTES_DATABASE``, ``NOTES_CONN_MAX_AGE``, ``NOTES_MAX_WORKERS``,
``NOTES_MAX_CALLS_PER_PRINCIPAL`` and ``NOTES_MAX_TASK_WORKERS`` let the tests run it on a database of their own."""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-only-not-secret")
DEBUG = False
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]"]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "minimcp.django",
    "notes",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]
ROOT_URLCONF = "notesite.urls"
TEMPLATES = [{
    "BACKEND": "django.template.backends.django.DjangoTemplates",
    "APP_DIRS": True,
    "OPTIONS": {"context_processors": [
        "django.template.context_processors.request",
        "django.contrib.auth.context_processors.auth",
        "django.contrib.messages.context_processors.messages",
    ]},
}]
DATABASES = {"default": {
    "ENGINE": "django.db.backends.sqlite3",
    "NAME": os.environ.get("NOTES_DATABASE", BASE_DIR / "db.sqlite3"),
    "CONN_MAX_AGE": int(os.environ.get("NOTES_CONN_MAX_AGE", "0")),
}}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
STATIC_URL = "static/"
USE_TZ = True

# OAUTH: MCP clients sign in with this site's login page (LOGIN_URL, Django's default /accounts/login/).
_CALL_SHARE = os.environ.get("NOTES_MAX_CALLS_PER_PRINCIPAL")
MINIMCP = {"NAME": "Notes", "MAX_WORKERS": int(os.environ.get("NOTES_MAX_WORKERS", "8")),
           "MAX_CALLS_PER_PRINCIPAL": int(_CALL_SHARE) if _CALL_SHARE else None,
           "MAX_TASK_WORKERS": int(os.environ.get("NOTES_MAX_TASK_WORKERS", "16")), "OAUTH": True}
