"""Per-user API tokens: how an MCP client acts as a user without the site's login page.

Only a SHA-256 digest of a token is stored; the token itself is shown once, when it is issued (in
the admin, or by ``manage.py mcp_token``). A token carries 256 random bits, so a fast digest is
enough: there is nothing to guess from it.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

#: Every token starts with this, so a leaked one is recognisable (secret scanners, logs).
TOKEN_PREFIX = "mcp_"


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


class APIToken(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_tokens")
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. \u201cassistant on my laptop\u201d.")
    digest = models.CharField(max_length=64, unique=True, editable=False)
    hint = models.CharField(max_length=12, editable=False, help_text="The token's first characters.")
    created = models.DateTimeField(auto_now_add=True)
    last_used = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.hint}\u2026)"

    def issue(self) -> str:
        """Give this token a fresh secret and return it; only its digest is kept."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        self.digest = digest(token)
        self.hint = token[:len(TOKEN_PREFIX) + 4]
        return token

    @classmethod
    def create(cls, user: Any, name: str) -> str:
        """Issue a token for ``user`` and return it: the only time it can be read."""
        token = cls(user=user, name=name)
        secret = token.issue()
        token.save()
        return secret

    @classmethod
    def user_for(cls, token: str) -> Any:
        """The active user ``token`` belongs to, or ``None``."""
        found = cls.objects.select_related("user").filter(digest=digest(token)).first()
        if found is None or not found.user.is_active:
            return None
        cls.objects.filter(pk=found.pk).update(last_used=timezone.now())
        return found.user
