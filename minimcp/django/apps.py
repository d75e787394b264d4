"""The Django app: ``"minimcp.django"`` in ``INSTALLED_APPS``."""

from __future__ import annotations

from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class MiniMCPConfig(AppConfig):
    name = "minimcp.django"
    label = "minimcp"
    verbose_name = "MCP"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        """Import each installed app's ``mcp.py``, as the admin imports ``admin.py``: its tools
        register; and the URL check of ``OAUTH``."""
        from minimcp.django import checks  # noqa: F401  (registers with django.core.checks)

        autodiscover_modules("mcp")
