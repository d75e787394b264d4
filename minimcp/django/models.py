"""Per-user API tokens: how an MCP client acts as a user without the site's login page.

Only a SHA-256 digest of a token is stored; the token itself is shown once, when it is issued (in
the admin, or by ``manage.py mcp_token``; ``--list`` and ``--revoke N`` manage them). Why a fast
digest is enough: ``minimcp.hosts.api_tokens``.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from minimcp.hosts.api_tokens import TOKEN_PREFIX, describe, digest, issue

__all__ = ["TOKEN_PREFIX", "APIToken", "OAuthClient", "OAuthGrant", "digest"]


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
        token = issue()
        self.digest = token.digest
        self.hint = token.hint
        return token.secret

    def describe(self) -> str:
        """One line of ``manage.py mcp_token --list``."""
        return describe(self.pk, self.hint, self.name, self.created, self.last_used)

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


class OAuthClient(models.Model):
    """An MCP client that registered itself (RFC 7591) to let users sign in with the site's login."""

    client_id = models.CharField(max_length=64, unique=True, editable=False)
    name = models.CharField(max_length=200, blank=True, editable=False)
    registration = models.JSONField(editable=False, help_text="What the client registered, as it registered it.")
    created = models.DateTimeField(auto_now_add=True)
    #: Whether a user ever allowed it: registration is anonymous, so a client no one allowed
    #: expires and is capped (``DatabaseGrantStore.add_client``); one that was used stays.
    used = models.BooleanField(default=False, editable=False)

    class Meta:
        verbose_name = "OAuth client"
        ordering = ["-created"]

    def __str__(self) -> str:
        return self.name or self.client_id


class OAuthGrant(models.Model):
    """One user's Allow for one client: a one-time code, then the tokens that replaced it, as
    SHA-256 digests. Deleting a grant signs that client out: its tokens stop working at once."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="mcp_grants")
    client = models.ForeignKey(OAuthClient, on_delete=models.CASCADE, related_name="grants")
    scope = models.CharField(max_length=500, blank=True)
    resource = models.CharField(max_length=500, null=True, blank=True)
    redirect_uri = models.CharField(max_length=2000)
    redirect_uri_provided_explicitly = models.BooleanField()
    code_challenge = models.CharField(max_length=128)
    code_digest = models.CharField(max_length=64, unique=True)
    code_expires_at = models.DateTimeField()
    code_used = models.BooleanField(default=False)
    access_digest = models.CharField(max_length=64, unique=True, null=True)
    access_expires_at = models.DateTimeField(null=True)
    refresh_digest = models.CharField(max_length=64, unique=True, null=True)
    refresh_expires_at = models.DateTimeField(null=True)
    created = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name = "MCP sign-in"
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.client} as {self.user}"
